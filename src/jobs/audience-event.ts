import type { Logger } from 'pino';
import type { AudienceEvent } from '../domain/audience/triggers.ts';

export type AudienceSubscriber = (event: AudienceEvent) => Promise<void>;

/**
 * Fans an audience event (contact created or changed, list joined, event tracked) out to its
 * subscribers: the place where flows and webhooks attach. Each subscriber is idempotent, since a
 * job can run again after a crash.
 */
export function audienceEventTask(subscribers: AudienceSubscriber[], log: Logger) {
  return async (payload: unknown) => {
    const event = payload as AudienceEvent;
    log.debug({ type: event.type, project: event.project_id }, 'audience event');
    for (const subscriber of subscribers) await subscriber(event);
  };
}
