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
  const written = await tx
    .insertInto('email_events')
    .values(events.map((e) => ({ ...e, detail: JSON.stringify(e.detail) })))
    .returning(['id', 'project_id', 'type'])
    .execute();
  await announceEmailEvents(
    tx,
    written.map((w) => ({ ...w, id: Number(w.id) })),
  );
}
