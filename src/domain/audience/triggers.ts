import type { Tx } from '../../db/database.ts';
import { enqueue, type JobSpec } from '../../jobs/enqueue.ts';

/**
 * What happens to an audience, announced as graphile-worker jobs (`audience_event`) committed in
 * the same transaction as the change itself: flows and webhooks subscribe to these without
 * touching the code that causes them. Bulk changes announce many ids in one job.
 */
export type AudienceEventType =
  | 'contact.created'
  | 'contact.updated'
  | 'contact.deleted'
  | 'contact.subscription_changed'
  | 'list.joined'
  | 'event.tracked';

export interface AudienceEvent {
  type: AudienceEventType;
  project_id: string;
  contact_ids?: string[];
  event_ids?: string[];
  list_id?: string;
  subscribed?: boolean;
}

export function audienceJob(event: AudienceEvent): JobSpec {
  return { task: 'audience_event', payload: { ...event } };
}

export async function announce(tx: Tx, events: AudienceEvent[]): Promise<void> {
  await enqueue(
    tx,
    events.filter((e) => (e.contact_ids?.length ?? 1) > 0 && (e.event_ids?.length ?? 1) > 0).map(audienceJob),
  );
}
