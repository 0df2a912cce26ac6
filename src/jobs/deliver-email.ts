import type { Task } from 'graphile-worker';
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
    await scheduler.take(payload.ids ?? [], bulk);
  };
}
