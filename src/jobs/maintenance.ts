import type { Task } from 'graphile-worker';
import type { Logger } from 'pino';
import { sweepAssetFolder } from '../domain/assets/sweep.ts';
import type { DomainContext } from '../domain/core/context.ts';
import { pruneExpiredData } from '../domain/maintenance/retention.ts';

/**
 * Hourly housekeeping (graphile-worker cron, so one node runs it per hour): retention prunes
 * request logs, webhook attempts, expired idempotency keys, old message bodies, raw inbound
 * sources and providers' feedback notifications, each after its POSTHORN_RETENTION_* period; and
 * the image folder's files that no asset names (domain/assets/sweep.ts).
 */
export function maintenanceTask(deps: { ctx: DomainContext; log: Logger }): Task<'maintenance'> {
  return async () => {
    const results = await pruneExpiredData(deps.ctx.db, deps.ctx.config.retention);
    const pruned = Object.fromEntries(results.filter((r) => r.pruned > 0).map((r) => [r.kind, r.pruned]));
    const unfinished = results.filter((r) => !r.finished).map((r) => r.kind);
    if (Object.keys(pruned).length > 0 || unfinished.length > 0)
      deps.log.info({ pruned, unfinished }, 'retention: pruned old data');
    const swept = await sweepAssetFolder(deps.ctx.db, deps.ctx.config.assets);
    if (swept > 0) deps.log.info({ files: swept }, 'assets: removed image files no asset names');
  };
}
