import { type Selectable, sql } from 'kysely';
import type { Tx } from '../../db/database.ts';
import type { TopicsTable } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError, NotFoundError, ValidationError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import { announce } from './triggers.ts';

/**
 * Topics: the kinds of mail a project sends (a newsletter, product updates, event invitations),
 * so a reader can leave one and keep the others. A contact who never chose has the topic's
 * default (`opt_in`: gets it; `opt_out`: only if they opted in); a choice is a row of
 * `contact_topics`, and each change a row of the contact's consent history naming the topic. A
 * contact unsubscribed from all marketing gets no topic's mail whatever their choices.
 */

type TopicRow = Selectable<TopicsTable> & { subscribers?: number | string };
export type Subscription = 'opt_in' | 'opt_out';
/** Where a change of a contact's topics came from, as the consent history shows it. */
export type TopicSource = 'api' | 'import' | 'preference_page' | 'one_click' | 'dashboard';

const MAX_TOPICS = 100;
const SUBSCRIPTIONS: readonly string[] = ['opt_in', 'opt_out'];
const VISIBILITIES: readonly string[] = ['public', 'private'];

function present(row: TopicRow) {
  return {
    id: row.id,
    object: 'topic' as const,
    name: row.name,
    description: row.description,
    default_subscription: row.default_subscription,
    visibility: row.visibility,
    subscribers: Number(row.subscribers ?? 0),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/**
 * Topics with their subscribers now: contacts subscribed to marketing who opted in, or who never
 * chose when the topic's default is `opt_in`.
 */
function withCounts(ctx: Pick<DomainContext, 'db'>, projectId: string) {
  return ctx.db
    .selectFrom('topics')
    .selectAll('topics')
    .select(
      sql<number>`case when topics.default_subscription = 'opt_in'
        then (select count(*) from contacts c where c.project_id = topics.project_id and c.subscribed)
           - (select count(*) from contact_topics ct join contacts c on c.id = ct.contact_id
               where ct.topic_id = topics.id and not ct.subscribed and c.subscribed)
        else (select count(*) from contact_topics ct join contacts c on c.id = ct.contact_id
               where ct.topic_id = topics.id and ct.subscribed and c.subscribed) end`.as('subscribers'),
    )
    .where('topics.project_id', '=', projectId);
}

async function findTopic(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string): Promise<TopicRow> {
  if (!isUuid(id)) throw new NotFoundError('Topic');
  const row = await withCounts(ctx, projectId).where('topics.id', '=', id).executeTakeFirst();
  if (!row) throw new NotFoundError('Topic');
  return row;
}

const duplicate = (err: unknown, name: string): never => {
  if ((err as { code?: string }).code === '23505')
    throw new ConflictError(`A topic named "${name}" already exists`);
  throw err;
};

function topicName(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '')
    throw new ValidationError('`name` is required: what readers see the topic as, say "Product updates"');
  if (value.trim().length > 50) throw new ValidationError('`name` must be at most 50 characters');
  return value.trim();
}

function topicDescription(value: unknown): string | null | undefined {
  if (value === undefined || value === null) return value as undefined | null;
  if (typeof value !== 'string' || value.length > 200)
    throw new ValidationError('`description` must be a string of at most 200 characters');
  return value;
}

function oneOf<T extends string>(value: unknown, allowed: readonly string[], field: string): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !allowed.includes(value))
    throw new ValidationError(`\`${field}\` must be one of ${allowed.map((a) => `"${a}"`).join(', ')}`);
  return value as T;
}

/** A topic as the API receives it. */
export interface TopicInput {
  name: string;
  description?: string | null;
  default_subscription: Subscription;
  visibility?: 'public' | 'private';
}

export async function createTopic(ctx: Pick<DomainContext, 'db'>, projectId: string, body: TopicInput) {
  const name = topicName(body.name);
  const description = topicDescription(body.description) ?? null;
  const defaultSubscription = oneOf<Subscription>(
    body.default_subscription,
    SUBSCRIPTIONS,
    'default_subscription',
  );
  if (!defaultSubscription)
    throw new ValidationError(
      '`default_subscription` is required: "opt_in" (contacts get it until they leave) or "opt_out" (only those who join)',
    );
  const visibility = oneOf<'public' | 'private'>(body.visibility, VISIBILITIES, 'visibility') ?? 'public';
  const { count } = await ctx.db
    .selectFrom('topics')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('project_id', '=', projectId)
    .executeTakeFirstOrThrow();
  if (Number(count) >= MAX_TOPICS)
    throw new ValidationError(`A project has at most ${MAX_TOPICS} topics; delete one first`);
  const row = await ctx.db
    .insertInto('topics')
    .values({
      project_id: projectId,
      name,
      description,
      default_subscription: defaultSubscription,
      visibility,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
    .catch((err) => duplicate(err, name));
  return getTopic(ctx, projectId, row.id);
}

export async function listTopics(ctx: Pick<DomainContext, 'db'>, projectId: string) {
  return {
    object: 'list' as const,
    data: (await withCounts(ctx, projectId).orderBy('topics.name').execute()).map(present),
  };
}

export async function getTopic(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  return present(await findTopic(ctx, projectId, id));
}

/**
 * PATCH: name, description and visibility. The default is fixed once made (changing it would
 * move every contact who never chose without their doing): make a new topic instead.
 */
export async function updateTopic(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  id: string,
  body: Partial<TopicInput>,
) {
  const current = await findTopic(ctx, projectId, id);
  if (body.default_subscription !== undefined && body.default_subscription !== current.default_subscription)
    throw new ValidationError(
      '`default_subscription` cannot change once the topic exists: it would move every contact who never chose; create a new topic instead',
    );
  const name = body.name === undefined ? undefined : topicName(body.name);
  const description = topicDescription(body.description);
  const visibility = oneOf<'public' | 'private'>(body.visibility, VISIBILITIES, 'visibility');
  await ctx.db
    .updateTable('topics')
    .set({
      ...(name !== undefined ? { name } : {}),
      ...(description !== undefined ? { description } : {}),
      ...(visibility !== undefined ? { visibility } : {}),
      updated_at: new Date(),
    })
    .where('id', '=', current.id)
    .execute()
    .catch((err) => duplicate(err, name ?? current.name));
  return getTopic(ctx, projectId, id);
}

export async function deleteTopic(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  const current = await findTopic(ctx, projectId, id);
  await ctx.db.deleteFrom('topics').where('id', '=', current.id).execute();
  return { id: current.id, object: 'topic' as const, deleted: true };
}

/** A contact's choice for one topic, as the API receives it. */
export interface TopicChoice {
  id: string;
  subscription: Subscription;
}

/** Checks choices (1 to 100, each topic once) against the project's topics; 400 names what is wrong. */
export async function checkChoices(
  db: Pick<DomainContext, 'db'>['db'],
  projectId: string,
  choices: unknown,
  field = 'topics',
): Promise<TopicChoice[]> {
  if (!Array.isArray(choices) || choices.length === 0 || choices.length > MAX_TOPICS)
    throw new ValidationError(`\`${field}\` must be an array of 1 to ${MAX_TOPICS} {id, subscription} items`);
  const seen = new Set<string>();
  const checked = choices.map((c, i) => {
    const item = c as Partial<TopicChoice> | null;
    if (!item || typeof item !== 'object' || typeof item.id !== 'string' || !isUuid(item.id))
      throw new ValidationError(`\`${field}[${i}].id\` must be a topic id`);
    const subscription = oneOf<Subscription>(item.subscription, SUBSCRIPTIONS, `${field}[${i}].subscription`);
    if (!subscription)
      throw new ValidationError(`\`${field}[${i}].subscription\` is required ("opt_in" or "opt_out")`);
    const id = item.id.toLowerCase();
    if (seen.has(id)) throw new ValidationError(`\`${field}[${i}]\` names a topic already given`);
    seen.add(id);
    return { id, subscription };
  });
  const known = new Set(
    (
      await db
        .selectFrom('topics')
        .select('id')
        .where('project_id', '=', projectId)
        .where(
          'id',
          'in',
          checked.map((c) => c.id),
        )
        .execute()
    ).map((r) => r.id),
  );
  const unknown = checked.findIndex((c) => !known.has(c.id));
  if (unknown >= 0) throw new ValidationError(`\`${field}[${unknown}].id\` is not a topic of this project`);
  return checked;
}

/**
 * Writes a contact's choices in the caller's transaction: only those that change what the contact
 * gets (against their choice, else the default) are stored, recorded in the consent history with
 * their source, and announced (`contact.topic_subscribed` / `contact.topic_unsubscribed`). Returns
 * those changes.
 */
export async function applyChoices(
  tx: Tx,
  projectId: string,
  contactId: string,
  choices: TopicChoice[],
  source: TopicSource,
  detail: { ip?: string | null; text?: string | null } = {},
): Promise<TopicChoice[]> {
  if (choices.length === 0) return [];
  const rows = await tx
    .selectFrom('topics as t')
    .leftJoin('contact_topics as ct', (join) =>
      join.onRef('ct.topic_id', '=', 't.id').on('ct.contact_id', '=', contactId),
    )
    .select(['t.id', 't.default_subscription', 'ct.subscribed'])
    .where('t.project_id', '=', projectId)
    .where(
      't.id',
      'in',
      choices.map((c) => c.id),
    )
    .execute();
  const now = new Map(rows.map((r) => [r.id, r.subscribed ?? r.default_subscription === 'opt_in']));
  const changed = choices.filter((c) => now.has(c.id) && now.get(c.id) !== (c.subscription === 'opt_in'));
  // every choice given is stored (a default chosen explicitly stays chosen if the default is not)
  await tx
    .insertInto('contact_topics')
    .values(
      choices
        .filter((c) => now.has(c.id))
        .map((c) => ({
          contact_id: contactId,
          topic_id: c.id,
          subscribed: c.subscription === 'opt_in',
        })),
    )
    .onConflict((oc) =>
      oc.columns(['contact_id', 'topic_id']).doUpdateSet((eb) => ({
        subscribed: eb.ref('excluded.subscribed'),
        updated_at: new Date(),
      })),
    )
    .execute();
  if (changed.length === 0) return [];
  await tx
    .insertInto('contact_consents')
    .values(
      changed.map((c) => ({
        contact_id: contactId,
        project_id: projectId,
        status: c.subscription === 'opt_in' ? ('granted' as const) : ('withdrawn' as const),
        source,
        ip: detail.ip ?? null,
        text_shown: detail.text ?? null,
        topic_id: c.id,
      })),
    )
    .execute();
  await announce(
    tx,
    changed.map((c) => ({
      type: 'contact.topic_changed' as const,
      project_id: projectId,
      contact_ids: [contactId],
      topic_id: c.id,
      subscribed: c.subscription === 'opt_in',
    })),
  );
  return changed;
}
