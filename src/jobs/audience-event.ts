import type { Task } from 'graphile-worker';
import type { Logger } from 'pino';
import type { AudienceEvent } from '../domain/audience/triggers.ts';

/** A subscriber gets the event and its occurrence: the job's id, the same when the job runs again. */
export type AudienceSubscriber = (event: AudienceEvent, occurrence: string) => Promise<void>;

/**
 * Fans an audience event (contact created or changed, list joined, event tracked) out to its
 * subscribers: the place where flows and webhooks attach. Each subscriber is idempotent, since a
 * job can run again after a crash.
 */
export function audienceEventTask(subscribers: AudienceSubscriber[], log: Logger): Task<'audience_event'> {
  return async (event, helpers) => {
    log.debug({ type: event.type, project: event.project_id }, 'audience event');
    for (const subscriber of subscribers) await subscriber(event, `job:${helpers.job.id}`);
  };
}
