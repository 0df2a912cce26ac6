import type { Db, Tx } from '../../db/database.ts';

/**
 * Which projects have a webhook to tell: a leaf of its own, so a resource that announces its events
 * (inbound mail, domains) asks it without importing the dispatcher that presents them (which imports
 * those resources: no import circle).
 */

/** Projects among these with at least one enabled endpoint (most have none: skip the work). */
export async function projectsWithWebhooks(db: Db | Tx, projectIds: string[]): Promise<Set<string>> {
  if (projectIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('webhook_endpoints')
    .select('project_id')
    .distinct()
    .where('project_id', 'in', [...new Set(projectIds)])
    .where('enabled', '=', true)
    .execute();
  return new Set(rows.map((r) => r.project_id));
}
