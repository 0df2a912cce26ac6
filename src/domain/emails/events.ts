import type { Tx } from '../../db/database.ts';
import { announceEmailEvents } from '../webhooks/dispatch.ts';

/** One entry of a message's timeline. */
export interface EmailEventInput {
  email_id: string;
  project_id: string;
  type: string;
  recipient: string | null;
  detail: Record<string, unknown>;
}

/**
 * Appends events to messages' timelines inside the caller's transaction and announces them to the
 * projects' webhooks in the same commit, so an event is never written without its announcement.
 */
export async function recordEmailEvents(tx: Tx, events: EmailEventInput[]): Promise<void> {
  if (events.length === 0) return;
  // each row says whether its project has a webhook to tell, in the same round trip as the insert
  const written = await tx
    .insertInto('email_events')
    .values(events.map((e) => ({ ...e, detail: JSON.stringify(e.detail) })))
    .returning((eb) => [
      'id',
      'project_id',
      'type',
      eb
        .exists(
          eb
            .selectFrom('webhook_endpoints as we')
            .select('we.id')
            .whereRef('we.project_id', '=', 'email_events.project_id')
            .where('we.enabled', '=', true),
        )
        .as('hooked'),
    ])
    .execute();
  await announceEmailEvents(
    tx,
    written.map((w) => ({
      id: Number(w.id),
      project_id: w.project_id,
      type: w.type,
      hooked: Boolean(w.hooked),
    })),
  );
}
