import type { Task } from 'graphile-worker';
import { drainAudienceOutbox } from '../domain/audience/triggers.ts';
import type { DomainContext } from '../domain/core/context.ts';

/** The most outbox rows one transaction turns into `audience_event` jobs. */
const OUTBOX_BATCH = 5_000;

/**
 * Turns the `audience_outbox` rows written with tracked events into merged `audience_event` jobs,
 * a transaction per batch, until the outbox is empty (see domain/audience/triggers.ts).
 */
export function audienceOutboxTask(ctx: DomainContext): Task<'audience_outbox'> {
  return async () => {
    while ((await drainAudienceOutbox(ctx.db, OUTBOX_BATCH)) === OUTBOX_BATCH) {
      // more waiting: the next transaction takes them
    }
  };
}
