import { sql } from 'kysely';
import type { Tx } from '../../db/database.ts';
import { type AudienceEvent, announce } from '../audience/triggers.ts';
import type { Step } from './definition.ts';
import { record, type Walker } from './steps.ts';

type UpdateStep = Extract<Step, { type: 'update_contact' }>;

/**
 * `update_contact` steps for every enrollment of a batch at one, set-based in the batch's
 * transaction: properties merged (a null value removes the key), a list joined or left. What
 * changed is announced like any audience change (`contact.updated`, `list.joined`), so other flows
 * and webhooks see it; a contact whose properties already held the values is not touched, so a
 * flow that triggers on its own update does not loop. Joining does not re-subscribe a contact who
 * left that list (their choice stands); a list deleted since the flow was written is skipped.
 */
export async function applyContactUpdates(
  tx: Tx,
  now: Date,
  pending: { walker: Walker; step: UpdateStep }[],
): Promise<void> {
  const groups = new Map<string, { step: UpdateStep; walkers: Walker[] }>();
  for (const { walker, step } of pending) {
    const key = `${walker.defKey}#${step.id}`;
    const group = groups.get(key) ?? { step, walkers: [] };
    group.walkers.push(walker);
    groups.set(key, group);
  }
  const announcements: AudienceEvent[] = [];
  for (const { step, walkers } of groups.values()) {
    const projectId = walkers[0].row.project_id;
    const ids = [...new Set(walkers.map((w) => w.row.contact_id))];
    const changes = step.set_properties ?? {};
    const set = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== null));
    const remove = Object.keys(changes).filter((k) => changes[k] === null);
    if (Object.keys(changes).length > 0) {
      const { rows } = await sql<{ id: string }>`
        update contacts set properties = (properties || ${JSON.stringify(set)}::jsonb) - ${remove}::text[],
                            updated_at = now()
         where project_id = ${projectId} and id = any(${ids}::uuid[])
           and not (properties @> ${JSON.stringify(set)}::jsonb and not properties ?| ${remove}::text[])
        returning id`.execute(tx);
      announcements.push({
        type: 'contact.updated',
        project_id: projectId,
        contact_ids: rows.map((r) => r.id),
      });
    }
    if (step.join_list_id !== null) {
      const { rows } = await sql<{ contact_id: string }>`
        insert into list_members (list_id, contact_id)
        select l.id, c from lists l, unnest(${ids}::uuid[]) c
         where l.id = ${step.join_list_id} and l.project_id = ${projectId}
        on conflict (list_id, contact_id) do nothing
        returning contact_id`.execute(tx);
      announcements.push({
        type: 'list.joined',
        project_id: projectId,
        list_id: step.join_list_id,
        contact_ids: rows.map((r) => r.contact_id),
      });
    }
    if (step.leave_list_id !== null)
      await sql`delete from list_members where list_id = ${step.leave_list_id}
                  and contact_id = any(${ids}::uuid[])`.execute(tx);
    for (const w of walkers) {
      for (const [k, v] of Object.entries(changes)) {
        if (v === null) delete w.properties[k];
        else w.properties[k] = v;
      }
      record(w, step, now, 'updated');
      w.at = step.next;
    }
  }
  await announce(tx, announcements);
}
