import type { Config } from '../config.ts';
import type { Db } from '../db/database.ts';
import { createMailboxTransport } from './mailbox.ts';
import { chooseRoute, type RoutedMessage } from './routes/choose.ts';
import type { Route } from './routes/config.ts';
import { withSimulator } from './simulator.ts';
import { createSmtpRelayTransport } from './smtp-relay.ts';
import type { Transport } from './transport.ts';

type Log = { info: (line: string) => void; warn: (line: string) => void };

/** A named way out and its transport. */
export interface ChosenRoute {
  name: string;
  transport: Transport;
}

/** Every route of the configuration with its transport, and the rules that choose among them. */
export interface Routes {
  /**
   * The route a message leaves by: the first of the list its rule names. Failover to the next
   * ones is a later increment of issue 31.
   */
  choose(message: RoutedMessage): ChosenRoute;
  /** `name (transport)` for each route, for the start log. */
  describe(): string;
  close(): Promise<void>;
}

/** One route's transport, behind the simulator, so addresses at its domain never leave the machine. */
function transportOf(name: string, route: Route, config: Config, db: Db, log: Log): Transport {
  if (route.type === 'mailbox') return withSimulator(createMailboxTransport(db, log.info));
  return withSimulator(
    createSmtpRelayTransport(route.url, {
      maxConnections: route.poolSize,
      timeoutSeconds: route.timeoutSeconds,
      warn: log.warn,
      // what the operator checks when the relay refuses Posthorn itself
      setting: config.routesFile ? `the route "${name}" of POSTHORN_ROUTES` : 'POSTHORN_SMTP_RELAY',
    }),
  );
}

/**
 * The configured routes, one transport each (created now, connecting when first used): the
 * routes file's, or the route `default` (the SMTP relay when POSTHORN_SMTP_RELAY is set, else the
 * dev mailbox).
 */
export function createRoutes(config: Config, db: Db, log: Log): Routes {
  const routes = new Map<string, ChosenRoute>();
  for (const [name, route] of config.routes.routes)
    routes.set(name, { name, transport: transportOf(name, route, config, db, log) });
  return {
    choose(message) {
      const [first] = chooseRoute(config.routes, message);
      const route = first === undefined ? undefined : routes.get(first);
      // a checked file ends with a rule matching everything, and names only routes it has
      if (!route)
        throw new Error(`no route for a message (${JSON.stringify(message)}): the rules are incomplete`);
      return route;
    },
    describe: () => [...routes.values()].map((r) => `${r.name} (${r.transport.name})`).join(', '),
    async close() {
      await Promise.all([...routes.values()].map((r) => r.transport.close()));
    },
  };
}
