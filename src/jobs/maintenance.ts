import type { Db } from '../db/database.ts';

/** Hourly housekeeping (graphile-worker cron, so one node runs it per hour): expired idempotency keys. */
export function maintenanceTask(deps: { db: Db }) {
  return async () => {
    await deps.db
      .deleteFrom('idempotency_keys')
      .where('created_at', '<', new Date(Date.now() - 86_400_000))
      .execute();
  };
}
