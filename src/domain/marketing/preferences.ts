import { sql } from 'kysely';
import type { Db, Tx } from '../../db/database.ts';
import { applyChoices, type TopicChoice } from '../audience/topics.ts';
import type { DomainContext } from '../core/context.ts';
import { recordEmailEvents } from '../emails/events.ts';

/**
 * Topics on the reader's side of marketing mail: which topic a message was sent for (its
 * campaign's, or its flow step's in the version the enrollment ran), the public topics the
 * preference page shows with the reader's state, and the changes the page and the one-click
 * unsubscribe make, each through `applyChoices` (recorded in the consent history with its source,
 * announced to webhooks) and as an `unsubscribed` event on the message when it leaves a topic.
 */

/** The message and contact an unsubscribe token names (engagement.ts `subscriber`). */
export interface Reader {
  email: { id: string; project_id: string; to_addresses: string[] };
  contact: { id: string; email: string };
}

/**
 * The topic the message was sent for, when it still exists: its campaign's `topic_id`, or the
 * `topic_id` of its flow send step in the version its enrollment followed. Null: a message without
 * a topic, or whose topic was deleted since (its unsubscribe then leaves all marketing: a reader
 * asking to stop is stopped).
 */
export async function emailTopic(db: Db | Tx, emailId: string): Promise<{ id: string; name: string } | null> {
  const { rows } = await sql<{ id: string; name: string }>`
    select t.id, t.name from emails e
      left join campaigns c on c.id = e.campaign_id
      join topics t on t.project_id = e.project_id and t.id = coalesce(c.topic_id, (
        select (s ->> 'topic_id')::uuid from flow_enrollments fe
          join flow_step_sends ss on ss.enrollment_id = fe.id and ss.step_id = e.flow_step and ss.email_id = e.id
          join flow_versions v on v.flow_id = fe.flow_id and v.version = fe.version
          cross join lateral jsonb_array_elements(v.definition -> 'steps') s
         where e.flow_id is not null and fe.flow_id = e.flow_id and fe.contact_id = e.contact_id
           and s ->> 'id' = e.flow_step
         limit 1))
     where e.id = ${emailId}`.execute(db);
  return rows[0] ?? null;
}

/** One topic as the preference page shows it. */
export interface ReaderTopic {
  id: string;
  name: string;
  description: string | null;
  subscribed: boolean;
}

/** The project's public topics, by name, with the reader's state: their choice, else the default. */
export async function readerTopics(
  db: Db | Tx,
  projectId: string,
  contactId: string,
): Promise<ReaderTopic[]> {
  const rows = await db
    .selectFrom('topics as t')
    .leftJoin('contact_topics as ct', (join) =>
      join.onRef('ct.topic_id', '=', 't.id').on('ct.contact_id', '=', contactId),
    )
    .select(['t.id', 't.name', 't.description', 't.default_subscription', 'ct.subscribed'])
    .where('t.project_id', '=', projectId)
    .where('t.visibility', '=', 'public')
    .orderBy('t.name')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    description: r.description,
    subscribed: r.subscribed ?? r.default_subscription === 'opt_in',
  }));
}

/** What the page shows of its sender: the project's name and the message's `From`. */
export async function senderOf(db: Db, emailId: string) {
  return db
    .selectFrom('emails as e')
    .innerJoin('projects as p', 'p.id', 'e.project_id')
    .select(['p.name as project', 'e.from_header as from'])
    .where('e.id', '=', emailId)
    .executeTakeFirst();
}

async function lockEmail(tx: Tx, emailId: string) {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`posthorn/engagement/${emailId}`}, 0))`.execute(
    tx,
  );
}

/** Applies choices and, when they leave any topic, records `unsubscribed` (scope topic) on the message. */
async function choose(
  ctx: Pick<DomainContext, 'db'>,
  { email, contact }: Reader,
  choices: TopicChoice[],
  source: 'one_click' | 'preference_page',
  ip: string | null,
): Promise<number> {
  if (choices.length === 0) return 0;
  return ctx.db.transaction().execute(async (tx) => {
    await lockEmail(tx, email.id);
    const changed = await applyChoices(tx, email.project_id, contact.id, choices, source, { ip });
    const left = changed.filter((c) => c.subscription === 'opt_out');
    if (left.length > 0)
      await recordEmailEvents(tx, [
        {
          email_id: email.id,
          project_id: email.project_id,
          type: 'unsubscribed',
          recipient: email.to_addresses[0] ?? null,
          detail: { scope: 'topic', topic_ids: left.map((c) => c.id), source },
        },
      ]);
    return changed.length;
  });
}

/** RFC 8058 one-click from a message for a topic: leaves that topic only (source `one_click`). */
export async function leaveTopic(
  ctx: Pick<DomainContext, 'db'>,
  reader: Reader,
  topicId: string,
  ip: string | null,
) {
  await choose(ctx, reader, [{ id: topicId, subscription: 'opt_out' }], 'one_click', ip);
}

/**
 * The preference page's form: each public topic shown has `topic_<id>` = `off` (a hidden field)
 * and, when its switch is on, `on` after it (the last value wins), so a switch turned off is told
 * from a topic not shown. Only the project's public topics change (source `preference_page`).
 */
export async function saveTopics(
  ctx: Pick<DomainContext, 'db'>,
  reader: Reader,
  form: Record<string, unknown>,
  ip: string | null,
): Promise<number> {
  const shown = await readerTopics(ctx.db, reader.email.project_id, reader.contact.id);
  const choices: TopicChoice[] = [];
  for (const t of shown) {
    const value = form[`topic_${t.id}`];
    if (value !== 'on' && value !== 'off') continue;
    choices.push({ id: t.id, subscription: value === 'on' ? 'opt_in' : 'opt_out' });
  }
  return choose(ctx, reader, choices, 'preference_page', ip);
}
