import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import { type RouteSettings, routeView } from '../../delivery/routes/view.ts';

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

export interface RouteReport extends RouteSettings {
  /** Healthy in every process that has written of it (or in none yet). */
  healthy: boolean;
  /** Taken and not-taken messages summed over the processes. */
  taken: number;
  not_taken: number;
  nodes: RouteNodeStatus[];
}

/**
 * The operator's view of the routes: each route of the configuration with its settings (no
 * secrets) and what every worker process last wrote of its health and traffic, and the rules.
 */
export async function routesReport(db: Db, config: Pick<Config, 'routes' | 'routesFile'>) {
  const view = routeView(config);
  const rows = await db.selectFrom('route_status').selectAll().orderBy('route').orderBy('node').execute();
  const routes: RouteReport[] = view.settings().map((settings) => {
    const nodes = rows
      .filter((r) => r.route === settings.name)
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
      ...settings,
      healthy: nodes.every((n) => n.healthy),
      taken: nodes.reduce((sum, n) => sum + n.taken, 0),
      not_taken: nodes.reduce((sum, n) => sum + n.not_taken, 0),
      nodes,
    };
  });
  return {
    file: view.file,
    routes,
    rules: view.rules(),
  };
}
