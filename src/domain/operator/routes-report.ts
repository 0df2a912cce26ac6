import type { Db } from '../../db/database.ts';
import { type Route, type RouteMatch, type RoutesConfig, routeTarget } from '../../delivery/routes/config.ts';

/** What a worker process last wrote of one route (route_status). */
export interface RouteNodeStatus {
  node: string;
  healthy: boolean;
  failures: number;
  ambiguous: number;
  taken: number;
  not_taken: number;
  last_error: string | null;
  changed_at: string | null;
  started_at: string;
  updated_at: string;
}

export interface RouteReport {
  name: string;
  type: Route['type'];
  /** Where it leads, never with its password: `smtp://host:port`, or `dev mailbox`. */
  target: string;
  tags: string | null;
  rate_per_second: number | null;
  rate_per_hour: number | null;
  pool_size: number | null;
  /** Healthy in every process that has written of it (or in none yet). */
  healthy: boolean;
  /** Taken and not-taken messages summed over the processes. */
  taken: number;
  not_taken: number;
  nodes: RouteNodeStatus[];
}

const matchOut = (m: RouteMatch) => ({
  ...(m.stream ? { stream: m.stream } : {}),
  ...(m.projectId ? { project_id: m.projectId } : {}),
  ...(m.domain ? { domain: m.domain } : {}),
  ...(m.recipientDomain ? { recipient_domain: m.recipientDomain } : {}),
});

/**
 * The operator's view of the routes: each route of the configuration with its settings (no
 * secrets) and what every worker process last wrote of its health and traffic, and the rules.
 */
export async function routesReport(db: Db, config: { routes: RoutesConfig; routesFile?: string }) {
  const rows = await db.selectFrom('route_status').selectAll().orderBy('route').orderBy('node').execute();
  const routes: RouteReport[] = [...config.routes.routes].map(([name, route]) => {
    const nodes = rows
      .filter((r) => r.route === name)
      .map(
        (r): RouteNodeStatus => ({
          node: r.node,
          healthy: r.healthy,
          failures: r.failures,
          ambiguous: r.ambiguous,
          taken: r.taken,
          not_taken: r.not_taken,
          last_error: r.last_error,
          changed_at: r.changed_at?.toISOString() ?? null,
          started_at: r.started_at.toISOString(),
          updated_at: r.updated_at.toISOString(),
        }),
      );
    return {
      name,
      type: route.type,
      target: routeTarget(route),
      tags: route.type === 'smtp' ? route.tags : null,
      rate_per_second: route.type === 'mailbox' ? null : route.ratePerSecond,
      rate_per_hour: route.type === 'mailbox' ? null : route.ratePerHour,
      pool_size: route.type === 'smtp' ? route.poolSize : null,
      healthy: nodes.every((n) => n.healthy),
      taken: nodes.reduce((sum, n) => sum + n.taken, 0),
      not_taken: nodes.reduce((sum, n) => sum + n.not_taken, 0),
      nodes,
    };
  });
  return {
    file: config.routesFile ?? null,
    routes,
    rules: config.routes.rules.map((rule) => ({ match: matchOut(rule.match), routes: rule.routes })),
  };
}
