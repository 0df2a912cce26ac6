import { MtaSts } from '../../src/delivery/direct/mta-sts.ts';
import { MxResolver } from '../../src/delivery/direct/mx.ts';
import { createDirectTransport, type DirectOptions } from '../../src/delivery/direct/transport.ts';
import type { DirectRoute } from '../../src/delivery/routes/config.ts';
import { RFC_PHASE_TIMEOUTS } from '../../src/delivery/routes/direct-config.ts';
import { DEFAULT_HEALTH } from '../../src/delivery/routes/health.ts';
import type { Transport } from '../../src/delivery/transport.ts';
import type { SimInternet } from './sim-internet.ts';

/** A direct route to a simulated internet's port: no source addresses or sites, a 10 s idle timeout. */
export function simRoute(net: SimInternet, extra: Partial<DirectRoute> = {}): DirectRoute {
  return {
    type: 'direct',
    sourceAddresses: [],
    sites: new Map(),
    port: net.port,
    timeoutSeconds: 10,
    transactionTimeoutSeconds: 600,
    phaseTimeouts: RFC_PHASE_TIMEOUTS,
    ratePerSecond: null,
    ratePerHour: null,
    health: DEFAULT_HEALTH,
    ...extra,
  };
}

/**
 * A direct route's transport on a simulated internet, driven as the worker drives it: the net's DNS
 * server, MTA-STS policies on its HTTPS port, its CA trusted. `opened` collects it for closing.
 */
export function simTransport(
  net: SimInternet,
  opened: Transport[],
  extra: Partial<DirectRoute> = {},
  options: Partial<DirectOptions> = {},
): Transport {
  const resolver = new MxResolver({ servers: [net.dns.address] });
  const transport = createDirectTransport(simRoute(net, extra), {
    resolver,
    mtaSts: new MtaSts({ dns: resolver, port: net.httpsPort, ca: [net.ca] }),
    ca: [net.ca],
    ...options,
  });
  opened.push(transport);
  return transport;
}
