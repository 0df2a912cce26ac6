import { hostname } from 'node:os';
import type { Config } from '../config.ts';
import type { Db } from '../db/database.ts';
import { routeGuard } from './direct/address-guard.ts';
import type { SitePace } from './direct/lanes.ts';
import { MtaSts } from './direct/mta-sts.ts';
import { MxResolver } from './direct/mx.ts';
import type { ConnectionLeases } from './direct/session.ts';
import { checkSourceAddresses } from './direct/source-check.ts';
import { createDirectTransport, type SourceWarmup } from './direct/transport.ts';
import { createMailboxTransport } from './mailbox.ts';
import { chooseRoute, type RoutedMessage } from './routes/choose.ts';
import type { Route, TagDialect } from './routes/config.ts';
import { DEFAULT_HEALTH, RouteHealth } from './routes/health.ts';
import { tagHeaders } from './routes/tags.ts';
import { createSesTransport } from './ses.ts';
import { createSimulatedTransport, withSimulator } from './simulator.ts';
import { createSmtpRelayTransport } from './smtp-relay.ts';
import type { Transport } from './transport.ts';

type Log = { info: (line: string) => void; warn: (line: string) => void };

/** A named way out, its transport and its health in this process. */
export interface ChosenRoute {
  name: string;
  transport: Transport;
  health: RouteHealth;
  /** The route's rate, enforced across worker processes (null: none). */
  rate: { perSecond: number | null; perHour: number | null } | null;
}

/** Every route of the configuration with its transport, and the rules that choose among them. */
export interface Routes {
  /**
   * The routes a message may leave by, in the order to try them: those its rule names, the
   * healthy ones first (in the rule's order), then the unhealthy ones (tried only when every
   * healthy one failed to take the message). Never empty.
   */
  choose(message: RoutedMessage): ChosenRoute[];
  /** Each route's name, transport and health, in the file's order. */
  list(): ChosenRoute[];
  /** Whether one of the routes is the dev mailbox: captured mail may then be read in the dashboard. */
  readonly hasMailbox: boolean;
  /** `name (transport)` for each route, for the start log. */
  describe(): string;
  /** What is wrong with the routes' setup that only the network can tell (a direct route's reverse DNS), one line each. */
  check(): Promise<string[]>;
  close(): Promise<void>;
}

/** SES's SMTP interface answers the message with `250 Ok <its MessageId>`, which its feedback names. */
const SES_SMTP_ANSWER = /^250 Ok (\S+)\s*$/;

/**
 * A relay's transport that puts the message's provider tags in front of its bytes, in the route's
 * dialect (outside the DKIM signature, as providers expect: they remove them). A relay speaking
 * SES's dialect is SES's SMTP interface: its answer names SES's MessageId, kept like the API's.
 */
function withTagHeaders(transport: Transport, dialect: TagDialect, configurationSet?: string): Transport {
  if (dialect === 'none') return transport;
  return {
    name: transport.name,
    async send(message) {
      const result = await transport.send({
        ...message,
        raw: Buffer.concat([
          Buffer.from(tagHeaders(dialect, message.tags, { configurationSet })),
          message.raw,
        ]),
      });
      const sesId = dialect === 'ses' ? SES_SMTP_ANSWER.exec(result.response)?.[1] : undefined;
      return sesId ? { ...result, providerMessageId: sesId } : result;
    },
    close: () => transport.close(),
  };
}

/** One route's transport, behind the simulator, so addresses at its domain never leave the machine. */
/** What the composition root lends the routes: the shared pacer of a direct route's sites. */
export interface RouteServices {
  sitePace?: SitePace;
  /** Direct routes' site connection caps, shared by every worker process (domain/sending/leases.ts). */
  connectionLeases?: ConnectionLeases;
  /** The warm-up plans of direct routes' source addresses (domain/reputation/warmup-count.ts). */
  sourceWarmup?: SourceWarmup;
}

function transportOf(
  name: string,
  route: Route,
  config: Config,
  db: Db,
  log: Log,
  services: RouteServices,
): Transport {
  if (route.type === 'mailbox') return withSimulator(createMailboxTransport(db, log.info));
  if (route.type === 'simulated') return createSimulatedTransport(route);
  // what the operator checks when the way out refuses Posthorn itself
  const setting = config.routesFile ? `the route "${name}" of POSTHORN_ROUTES` : 'POSTHORN_SMTP_RELAY';
  if (route.type === 'ses') return withSimulator(createSesTransport(route, { warn: log.warn, setting }));
  if (route.type === 'direct') {
    const resolver = new MxResolver({ servers: config.dnsServers });
    // one guard for the route's connections and its MTA-STS fetches
    const guard = routeGuard(route);
    return withSimulator(
      createDirectTransport(route, {
        resolver,
        name,
        guard,
        mtaSts: new MtaSts({
          dns: resolver,
          guard,
          port: config.mtaSts.port,
          ...(config.mtaSts.ca ? { ca: [config.mtaSts.ca] } : {}),
        }),
        ...(services.sitePace ? { pace: services.sitePace } : {}),
        ...(services.connectionLeases ? { leases: services.connectionLeases } : {}),
        ...(services.sourceWarmup ? { warmup: services.sourceWarmup } : {}),
        warn: (line) => log.warn(`route ${name}: ${line}`),
      }),
    );
  }
  const relay = createSmtpRelayTransport(route.url, {
    maxConnections: route.poolSize,
    timeoutSeconds: route.timeoutSeconds,
    warn: log.warn,
    setting,
  });
  return withSimulator(withTagHeaders(relay, route.tags, route.configurationSet));
}

/** Where this process's view of its routes is written (route_status): its host and pid. */
export const NODE = `${hostname()}:${process.pid}`;
/** How often a route's changed health and traffic are written. */
const STATUS_EVERY_MS = 2_000;

/**
 * Writes each route whose health or traffic changed to route_status, every STATUS_EVERY_MS (a
 * process that sends nothing writes nothing), and once more when it stops. A failed write is
 * tried again at the next tick: the table is what operators read, not what delivery relies on.
 */
function statusWriter(db: Db, routes: Map<string, ChosenRoute>) {
  const startedAt = new Date();
  let writing: Promise<void> = Promise.resolve();
  const write = async () => {
    const changed = [...routes.values()].filter((r) => r.health.dirty);
    if (changed.length === 0) return;
    for (const route of changed) route.health.dirty = false;
    const rows = changed.map((route) => {
      const state = route.health.state();
      return {
        route: route.name,
        node: NODE,
        healthy: state.healthy,
        failures: state.failures,
        ambiguous: state.ambiguous,
        taken: state.taken,
        not_taken: state.notTaken,
        last_error: state.lastError,
        changed_at: state.changedAt,
        started_at: startedAt,
      };
    });
    try {
      await db
        .insertInto('route_status')
        .values(rows)
        .onConflict((oc) =>
          oc.columns(['route', 'node']).doUpdateSet((eb) => ({
            healthy: eb.ref('excluded.healthy'),
            failures: eb.ref('excluded.failures'),
            ambiguous: eb.ref('excluded.ambiguous'),
            taken: eb.ref('excluded.taken'),
            not_taken: eb.ref('excluded.not_taken'),
            last_error: eb.ref('excluded.last_error'),
            changed_at: eb.ref('excluded.changed_at'),
            started_at: eb.ref('excluded.started_at'),
            updated_at: new Date(),
          })),
        )
        .execute();
    } catch {
      for (const route of changed) route.health.dirty = true;
    }
  };
  const timer = setInterval(() => {
    writing = writing.then(write);
  }, STATUS_EVERY_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      writing = writing.then(write);
      await writing;
    },
  };
}

/**
 * The configured routes, one transport each (created now, connecting when first used): the
 * routes file's, or the route `default` (the SMTP relay when POSTHORN_SMTP_RELAY is set, else the
 * dev mailbox).
 */
export function createRoutes(config: Config, db: Db, log: Log, services: RouteServices = {}): Routes {
  const routes = new Map<string, ChosenRoute>();
  const writer = statusWriter(db, routes);
  for (const [name, route] of config.routes.routes) {
    const transport = transportOf(name, route, config, db, log, services);
    const settings = route.type === 'mailbox' ? DEFAULT_HEALTH : route.health;
    const rate =
      route.type !== 'mailbox' && (route.ratePerSecond !== null || route.ratePerHour !== null)
        ? { perSecond: route.ratePerSecond, perHour: route.ratePerHour }
        : null;
    const probe = transport.probe ? () => transport.probe?.() as Promise<void> : undefined;
    routes.set(name, { name, transport, rate, health: new RouteHealth(name, probe, settings, log) });
  }
  return {
    choose(message) {
      const named = chooseRoute(config.routes, message).flatMap((name) => routes.get(name) ?? []);
      // a checked file ends with a rule matching everything, and names only routes it has
      if (named.length === 0)
        throw new Error(`no route for a message (${JSON.stringify(message)}): the rules are incomplete`);
      return [...named.filter((r) => r.health.isHealthy), ...named.filter((r) => !r.health.isHealthy)];
    },
    list: () => [...routes.values()],
    hasMailbox: [...config.routes.routes.values()].some((route) => route.type === 'mailbox'),
    describe: () => [...routes.values()].map((r) => `${r.name} (${r.transport.name})`).join(', '),
    async check() {
      const resolver = new MxResolver({ servers: config.dnsServers });
      const problems: string[] = [];
      for (const [name, route] of config.routes.routes)
        if (route.type === 'direct')
          problems.push(...(await checkSourceAddresses(name, route.sourceAddresses, resolver)));
      return problems;
    },
    async close() {
      await writer.stop();
      for (const route of routes.values()) route.health.close();
      await Promise.all([...routes.values()].map((r) => r.transport.close()));
    },
  };
}
