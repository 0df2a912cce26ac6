import type { Task } from 'graphile-worker';
import type { Logger } from 'pino';
import type { DomainContext } from '../domain/core/context.ts';
import { advanceFlows } from '../domain/flows/engine.ts';

/**
 * Advances the due enrollments of active flows, batch after batch, and schedules the next run at
 * the earliest wake_at (see domain/flows/engine.ts). Also queued by every enrolment and every
 * matched wait_for_event (job key `flow-advance`), and by the crontab each minute.
 */
export function flowAdvanceTask(ctx: DomainContext, log: Logger): Task<'flow_advance'> {
  return async () => {
    const advanced = await advanceFlows(ctx, (enrollmentId, err) =>
      log.warn({ enrollmentId, err: (err as Error).message }, 'flow enrollment failed in the engine'),
    );
    if (advanced > 0) log.debug({ advanced }, 'flow enrollments advanced');
  };
}
