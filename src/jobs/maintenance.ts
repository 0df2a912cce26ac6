import type { Task } from 'graphile-worker';
import type { Logger } from 'pino';
import type { DomainContext } from '../domain/core/context.ts';
import { pruneExpiredData } from '../domain/maintenance/retention.ts';

/**
 * Hourly housekeeping (graphile-worker cron, so one node runs it per hour): retention prunes
 * request logs, webhook attempts, expired idempotency keys, old message bodies, raw inbound
 * sources and providers' feedback notifications, each after its POSTHORN_RETENTION_* period.
 */
export function maintenanceTask(deps: { ctx: DomainContext; log: Logger }): Task<'maintenance'> {
  return async () => {
    const results = await pruneExpiredData(deps.ctx.db, deps.ctx.config.retention);
    const pruned = Object.fromEntries(results.filter((r) => r.pruned > 0).map((r) => [r.kind, r.pruned]));
    const unfinished = results.filter((r) => !r.finished).map((r) => r.kind);
    if (Object.keys(pruned).length > 0 || unfinished.length > 0)
      deps.log.info({ pruned, unfinished }, 'retention: pruned old data');
  };
}
