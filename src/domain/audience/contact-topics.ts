import type { DomainContext } from '../core/context.ts';
import { findContact } from './contacts.ts';
import { applyChoices, checkChoices, type TopicSource } from './topics.ts';

/** A contact's topics (GET and PATCH /contacts/{id}/topics), over topics.ts. */

/** A contact's subscription to every topic of the project: its choice, or the topic's default. */
export async function contactTopics(ctx: Pick<DomainContext, 'db'>, projectId: string, idOrEmail: string) {
  const contact = await findContact(ctx, projectId, idOrEmail);
  const rows = await ctx.db
    .selectFrom('topics as t')
    .leftJoin('contact_topics as ct', (join) =>
      join.onRef('ct.topic_id', '=', 't.id').on('ct.contact_id', '=', contact.id),
    )
    .select(['t.id', 't.name', 't.description', 't.visibility', 't.default_subscription', 'ct.subscribed'])
    .where('t.project_id', '=', projectId)
    .orderBy('t.name')
    .execute();
  return {
    object: 'list' as const,
    contact_id: contact.id,
    data: rows.map((r) => ({
      id: r.id,
      object: 'contact_topic' as const,
      name: r.name,
      description: r.description,
      visibility: r.visibility,
      subscription:
        (r.subscribed ?? r.default_subscription === 'opt_in') ? ('opt_in' as const) : ('opt_out' as const),
      chosen: r.subscribed !== null,
    })),
  };
}

/** PATCH /contacts/{id}/topics: the choices given change; the others keep theirs. */
export async function updateContactTopics(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  idOrEmail: string,
  body: { topics?: unknown },
  source: TopicSource = 'api',
) {
  const contact = await findContact(ctx, projectId, idOrEmail);
  const choices = await checkChoices(ctx.db, projectId, body.topics);
  await ctx.db.transaction().execute((tx) => applyChoices(tx, projectId, contact.id, choices, source));
  return contactTopics(ctx, projectId, contact.id);
}
