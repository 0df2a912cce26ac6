import { parseNetwork } from '../../src/delivery/address-class.ts';
import { routeGuard } from '../../src/delivery/direct/address-guard.ts';
import { MtaSts } from '../../src/delivery/direct/mta-sts.ts';
import { MxResolver } from '../../src/delivery/direct/mx.ts';
import { createDirectTransport, type DirectOptions } from '../../src/delivery/direct/transport.ts';
import type { DirectRoute } from '../../src/delivery/routes/config.ts';
import { RFC_PHASE_TIMEOUTS } from '../../src/delivery/routes/direct-config.ts';
import { DEFAULT_HEALTH } from '../../src/delivery/routes/health.ts';
import type { Transport } from '../../src/delivery/transport.ts';
import { SIM_NETWORKS, type SimInternet } from './sim-internet.ts';

/**
 * A direct route to a simulated internet's port: no source addresses or sites, a 10 s idle
 * timeout, the network's addresses allowed (`allowNetworks: []` for a route that refuses them).
 */
export function simRoute(net: SimInternet, extra: Partial<DirectRoute> = {}): DirectRoute {
  return {
    type: 'direct',
    sourceAddresses: [],
    sites: new Map(),
    port: net.port,
    timeoutSeconds: 10,
    transactionTimeoutSeconds: 600,
    phaseTimeouts: RFC_PHASE_TIMEOUTS,
    allowNetworks: SIM_NETWORKS.flatMap((n) => {
      const network = parseNetwork(n);
      return 'error' in network ? [] : [network];
    }),
    ratePerSecond: null,
    ratePerHour: null,
    health: DEFAULT_HEALTH,
    ...extra,
  };
}

/**
 * A direct route's transport on a simulated internet, driven as the worker drives it: the net's DNS
 * server, MTA-STS policies on its HTTPS port, its CA trusted, one address guard (the route's, or
 * `options.guard`) for its connections and its policy fetches. `opened` collects it for closing.
 */
export function simTransport(
  net: SimInternet,
  opened: Transport[],
  extra: Partial<DirectRoute> = {},
  options: Partial<DirectOptions> = {},
): Transport {
  const resolver = new MxResolver({ servers: [net.dns.address] });
  const route = simRoute(net, extra);
  const guard = options.guard ?? routeGuard(route);
  const transport = createDirectTransport(route, {
    resolver,
    mtaSts: new MtaSts({ dns: resolver, guard, port: net.httpsPort, ca: [net.ca] }),
    ca: [net.ca],
    ...options,
    guard,
  });
  opened.push(transport);
  return transport;
}
