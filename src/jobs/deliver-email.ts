import type { Task } from 'graphile-worker';
import { JOB_CHUNK } from '../domain/emails/write.ts';
import type { DeliveryScheduler } from '../domain/sending/scheduler.ts';

/**
 * Claims accepted messages (the payload holds their ids only) and hands them to the process's
 * delivery scheduler (domain/sending): the job ends once they are claimed, never waiting on a
 * remote server. `bulk` (deliver_email: marketing and automation, and what else shares their
 * task) leaves room in the scheduler for transactional mail.
 */
export function deliverEmailTask(
  scheduler: DeliveryScheduler,
  bulk: boolean,
): Task<'deliver_email'> & Task<'deliver_transactional'> {
  return async (payload) => {
    const ids = (Array.isArray(payload) ? payload : [payload]).flatMap((p) => p.ids ?? []);
    // a batch job may have gathered many: taken in batches of an accepted write's size
    for (let at = 0; at < ids.length; at += JOB_CHUNK)
      await scheduler.take(ids.slice(at, at + JOB_CHUNK), bulk);
  };
}
