import { type Selectable, sql } from 'kysely';
import type { ListsTable } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError, NotFoundError, ValidationError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import type { ProjectFacts } from '../plans/project-facts.ts';
import { checkContactLimit, contactIdsByEmail } from './contacts.ts';
import { checkDescription, checkName, contactEmail } from './fields.ts';
import { announce } from './triggers.ts';

type ListRow = Selectable<ListsTable> & { member_count?: number; unsubscribed_count?: number };
const MAX_BULK = 1000;

function present(row: ListRow) {
  return {
    id: row.id,
    object: 'list' as const,
    name: row.name,
    description: row.description,
    member_count: Number(row.member_count ?? 0),
    unsubscribed_count: Number(row.unsubscribed_count ?? 0),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

function withCounts(ctx: Pick<DomainContext, 'db'>, projectId: string) {
  return ctx.db
    .selectFrom('lists')
    .selectAll('lists')
    .select([
      sql<number>`(select count(*) from list_members m where m.list_id = lists.id and m.subscribed)`.as(
        'member_count',
      ),
      sql<number>`(select count(*) from list_members m where m.list_id = lists.id and not m.subscribed)`.as(
        'unsubscribed_count',
      ),
    ])
    .where('lists.project_id', '=', projectId);
}

async function findList(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string): Promise<ListRow> {
  if (!isUuid(id)) throw new NotFoundError('List');
  const row = await withCounts(ctx, projectId).where('lists.id', '=', id).executeTakeFirst();
  if (!row) throw new NotFoundError('List');
  return row;
}

const duplicate = (err: unknown, name: string): never => {
  if ((err as { code?: string }).code === '23505')
    throw new ConflictError(`A list named "${name}" already exists`);
  throw err;
};

/** A list as the API receives it; `name` and `description` are checked here. */
export interface ListInput {
  name: string;
  description?: string | null;
}

/** Contacts to add, remove or unsubscribe: by address or by id, one of the two. */
export interface ListTargets {
  emails?: string[];
  ids?: string[];
}

export async function createList(ctx: Pick<DomainContext, 'db'>, projectId: string, body: ListInput) {
  const name = checkName(body.name);
  const description = checkDescription(body.description) ?? null;
  const row = await ctx.db
    .insertInto('lists')
    .values({ project_id: projectId, name, description })
    .returningAll()
    .executeTakeFirstOrThrow()
    .catch((err) => duplicate(err, name));
  return present(row);
}

export async function listLists(ctx: Pick<DomainContext, 'db'>, projectId: string) {
  return { data: (await withCounts(ctx, projectId).orderBy('lists.name').execute()).map(present) };
}

export async function getList(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  return present(await findList(ctx, projectId, id));
}

export async function updateList(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  id: string,
  body: Partial<ListInput>,
) {
  const current = await findList(ctx, projectId, id);
  const name = body.name === undefined ? undefined : checkName(body.name);
  const description = checkDescription(body.description);
  await ctx.db
    .updateTable('lists')
    .set({
      ...(name !== undefined ? { name } : {}),
      ...(description !== undefined ? { description } : {}),
      updated_at: new Date(),
    })
    .where('id', '=', current.id)
    .execute()
    .catch((err) => duplicate(err, name ?? current.name));
  return getList(ctx, projectId, id);
}

export async function deleteList(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  const current = await findList(ctx, projectId, id);
  await ctx.db.deleteFrom('lists').where('id', '=', current.id).execute();
}

/** `{emails: [...]}` or `{ids: [...]}` (not both), at most 1,000. */
function checkTargets({ emails, ids }: ListTargets): { emails: string[] } | { ids: string[] } {
  const items = emails ?? ids;
  if (items === undefined || (emails !== undefined && ids !== undefined))
    throw new ValidationError('Give either `emails` (addresses) or `ids` (contact ids), as an array');
  const field = emails !== undefined ? 'emails' : 'ids';
  if (items.length === 0 || items.length > MAX_BULK)
    throw new ValidationError(`\`${field}\` must be an array of 1 to ${MAX_BULK} items`);
  if (field === 'emails')
    return { emails: [...new Set(items.map((e, i) => contactEmail(e, `emails[${i}]`)))] };
  items.forEach((id, i) => {
    if (!isUuid(id)) throw new ValidationError(`\`ids[${i}]\` must be a contact id`);
  });
  return { ids: [...new Set(items.map((i) => i.toLowerCase()))] };
}

/** Contact ids for the targets; unknown ids are a 400 naming them; unknown emails are returned apart. */
async function resolveTargets(
  ctx: DomainContext,
  projectId: string,
  targets: { emails: string[] } | { ids: string[] },
) {
  if ('ids' in targets) {
    const rows = await ctx.db
      .selectFrom('contacts')
      .select('id')
      .where('project_id', '=', projectId)
      .where('id', 'in', targets.ids)
      .execute();
    const missing = targets.ids.filter((id) => !rows.some((r) => r.id === id));
    if (missing.length > 0)
      throw new ValidationError(`No contact with id ${missing.slice(0, 5).join(', ')} in this project`);
    return { ids: rows.map((r) => r.id), unknownEmails: [] as string[] };
  }
  const known = await contactIdsByEmail(ctx.db, projectId, targets.emails);
  return {
    ids: [...known.values()],
    unknownEmails: targets.emails.filter((e) => !known.has(e)),
  };
}

/**
 * POST /lists/{id}/contacts: adds contacts (by id, or by email: unknown addresses become new
 * contacts) and re-subscribes members who had left this list.
 */
export async function addToList(ctx: DomainContext, facts: ProjectFacts, listId: string, body: ListTargets) {
  const list = await findList(ctx, facts.id, listId);
  const targets = checkTargets(body);
  const { ids, unknownEmails } = await resolveTargets(ctx, facts.id, targets);
  await checkContactLimit(ctx.db, facts, unknownEmails.length);
  return ctx.db.transaction().execute(async (tx) => {
    const created =
      unknownEmails.length > 0
        ? await tx
            .insertInto('contacts')
            .values(unknownEmails.map((email) => ({ project_id: facts.id, email })))
            .onConflict((oc) => oc.columns(['project_id', 'email']).doNothing())
            .returning('id')
            .execute()
        : [];
    const all = [...ids, ...created.map((c) => c.id)];
    const joined = await sql<{ contact_id: string }>`
      insert into list_members as m (list_id, contact_id)
      select ${list.id}, unnest(${all}::uuid[])
      on conflict (list_id, contact_id) do update set subscribed = true, updated_at = now()
        where not m.subscribed
      returning contact_id`.execute(tx);
    const joinedIds = joined.rows.map((r) => r.contact_id);
    await announce(tx, [
      { type: 'contact.created', project_id: facts.id, contact_ids: created.map((c) => c.id) },
      { type: 'list.joined', project_id: facts.id, list_id: list.id, contact_ids: joinedIds },
    ]);
    return {
      object: 'list_change' as const,
      list_id: list.id,
      added: joinedIds.length,
      already_members: all.length - joinedIds.length,
      contacts_created: created.length,
    };
  });
}

/** DELETE /lists/{id}/contacts: takes contacts off the list (not an unsubscribe: no consent change). */
export async function removeFromList(
  ctx: DomainContext,
  projectId: string,
  listId: string,
  body: ListTargets,
) {
  const list = await findList(ctx, projectId, listId);
  const { ids } = await resolveTargets(ctx, projectId, checkTargets(body));
  const removed =
    ids.length === 0
      ? []
      : await ctx.db
          .deleteFrom('list_members')
          .where('list_id', '=', list.id)
          .where('contact_id', 'in', ids)
          .returning('contact_id')
          .execute();
  return { object: 'list_change' as const, list_id: list.id, removed: removed.length };
}

/**
 * POST /lists/{id}/unsubscribe: the contacts leave this list only (they stay members, marked
 * unsubscribed, and keep their other lists); PATCH /contacts/{id} {subscribed: false} leaves all
 * marketing.
 */
export async function unsubscribeFromList(
  ctx: DomainContext,
  projectId: string,
  listId: string,
  body: ListTargets,
) {
  const list = await findList(ctx, projectId, listId);
  const { ids } = await resolveTargets(ctx, projectId, checkTargets(body));
  return ctx.db.transaction().execute(async (tx) => {
    const changed =
      ids.length === 0
        ? []
        : await tx
            .updateTable('list_members')
            .set({ subscribed: false, updated_at: new Date() })
            .where('list_id', '=', list.id)
            .where('contact_id', 'in', ids)
            .where('subscribed', '=', true)
            .returning('contact_id')
            .execute();
    await announce(tx, [
      {
        type: 'contact.subscription_changed',
        project_id: projectId,
        list_id: list.id,
        subscribed: false,
        contact_ids: changed.map((c) => c.contact_id),
      },
    ]);
    return { object: 'list_change' as const, list_id: list.id, unsubscribed: changed.length };
  });
}
