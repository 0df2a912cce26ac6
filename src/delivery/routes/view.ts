import type { Config } from '../../config.ts';
import { possibleRoutes, type RoutedMessage } from './choose.ts';
import {
  type RouteMatch,
  type RoutesConfig,
  routeTarget,
  type SourceAddress,
  sendsThroughSes,
} from './config.ts';

export type { SourceAddress } from './config.ts';

/** A route that takes mail off this server (a relay, SES or direct delivery), as the rest of the code sees it. */
export interface OutboundRoute {
  name: string;
  type: 'smtp' | 'ses' | 'direct';
  /** A direct route's source addresses (empty for the others). */
  sourceAddresses: SourceAddress[];
  /** Messages per second and per hour through it across worker processes (null: no limit). */
  rate: { perSecond: number | null; perHour: number | null } | null;
}

/** One route's settings for the operator's eyes (GET /admin/routes, `posthorn routes`): never a secret. */
export interface RouteSettings {
  name: string;
  type: 'smtp' | 'ses' | 'mailbox' | 'direct' | 'simulated';
  /** Where it leads: `smtp://host:port`, `dev mailbox`, … */
  target: string;
  tags: string | null;
  rate_per_second: number | null;
  rate_per_hour: number | null;
  pool_size: number | null;
}

/**
 * What the rest of Posthorn may know of the routes configuration (POSTHORN_ROUTES, or the route
 * `default` made of POSTHORN_SMTP_RELAY). Only the routes module reads the configuration itself:
 * domain code asks this view (which routes a sender's mail may take, their rates and sources,
 * whether SES feedback applies), so a change to the file's shape changes one folder.
 */
export interface RouteView {
  /** The routes file's path, or null when the routes are POSTHORN_SMTP_RELAY's or the dev mailbox. */
  readonly file: string | null;
  /** Whether any route hands mail to Amazon SES (its feedback is then taken). */
  readonly sendsThroughSes: boolean;
  /** Every direct route's source address, with the route's name. */
  readonly directSources: ReadonlyMap<string, string>;
  /**
   * The routes off this server that a sender's mail (stream, project, sending domain) may meet,
   * whoever its recipients (the first route of each rule that may apply): what a whole campaign
   * may leave by. The dev mailbox and the feedback simulator are left out (nothing leaves).
   */
  outboundFor(sender: Omit<RoutedMessage, 'recipientDomain'>): OutboundRoute[];
  /** Each route's settings, in the file's order. */
  settings(): RouteSettings[];
  /** The rules, in order, as the operator wrote them. */
  rules(): { match: Record<string, string>; routes: string[] }[];
  /** `name (where it leads)` for each route, never a password: for the start log. */
  targets(): string[];
}

const matchOut = (m: RouteMatch): Record<string, string> => ({
  ...(m.stream ? { stream: m.stream } : {}),
  ...(m.projectId ? { project_id: m.projectId } : {}),
  ...(m.domain ? { domain: m.domain } : {}),
  ...(m.recipientDomain ? { recipient_domain: m.recipientDomain } : {}),
});

function viewOf(routes: RoutesConfig, file: string | null): RouteView {
  const directSources = new Map<string, string>();
  for (const [name, route] of routes.routes)
    if (route.type === 'direct') for (const s of route.sourceAddresses) directSources.set(s.address, name);
  return {
    file,
    sendsThroughSes: sendsThroughSes(routes),
    directSources,
    outboundFor(sender) {
      return possibleRoutes(routes, sender).flatMap((name): OutboundRoute[] => {
        const route = routes.routes.get(name);
        if (!route || route.type === 'mailbox' || route.type === 'simulated') return [];
        const limited = route.ratePerSecond !== null || route.ratePerHour !== null;
        return [
          {
            name,
            type: route.type,
            sourceAddresses: route.type === 'direct' ? route.sourceAddresses : [],
            rate: limited ? { perSecond: route.ratePerSecond, perHour: route.ratePerHour } : null,
          },
        ];
      });
    },
    settings: () =>
      [...routes.routes].map(([name, route]) => ({
        name,
        type: route.type,
        target: routeTarget(route),
        tags: route.type === 'smtp' ? route.tags : null,
        rate_per_second: route.type === 'mailbox' ? null : route.ratePerSecond,
        rate_per_hour: route.type === 'mailbox' ? null : route.ratePerHour,
        pool_size: route.type === 'smtp' ? route.poolSize : null,
      })),
    rules: () => routes.rules.map((rule) => ({ match: matchOut(rule.match), routes: rule.routes })),
    targets: () => [...routes.routes].map(([name, route]) => `${name} (${routeTarget(route)})`),
  };
}

const views = new WeakMap<RoutesConfig, RouteView>();

/** The view of a configuration's routes (made once per configuration). */
export function routeView(config: Pick<Config, 'routes' | 'routesFile'>): RouteView {
  let view = views.get(config.routes);
  if (!view) {
    view = viewOf(config.routes, config.routesFile ?? null);
    views.set(config.routes, view);
  }
  return view;
}
