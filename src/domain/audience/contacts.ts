import { type ExpressionBuilder, type Selectable, sql } from 'kysely';
import type { Db, Tx } from '../../db/database.ts';
import type { ContactsTable, Database } from '../../db/schema.ts';
import { addressPrefixPattern } from '../core/addresses.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError, NotFoundError, PlanFeatureError, ValidationError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import { planOrDefault, upgradeFor } from '../plans/plans.ts';
import type { ProjectFacts } from '../plans/project-facts.ts';
import {
  type ConsentInput,
  type ConsentRequest,
  checkConsent,
  checkProperties,
  contactEmail,
  dateParam,
  optionalBoolean,
  optionalName,
  type PropertyValue,
} from './fields.ts';
import { segmentCondition, withSegmentSettings } from './segments.ts';
import { applyChoices, checkChoices, type TopicChoice } from './topics.ts';
import { announce } from './triggers.ts';

type ContactRow = Selectable<ContactsTable> & { list_ids?: string[] | null };

const listIds = (eb: ExpressionBuilder<Database, 'contacts'>) =>
  eb
    .selectFrom('list_members as lm')
    .whereRef('lm.contact_id', '=', 'contacts.id')
    .where('lm.subscribed', '=', true)
    .select(sql<string[]>`coalesce(array_agg(lm.list_id order by lm.created_at), '{}')`.as('ids'))
    .as('list_ids');

export function presentContact(row: ContactRow) {
  return {
    id: row.id,
    object: 'contact' as const,
    email: row.email,
    first_name: row.first_name,
    last_name: row.last_name,
    properties: row.properties,
    subscribed: row.subscribed,
    lists: row.list_ids ?? [],
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** How many contacts the project holds. */
export async function countContacts(db: Db, projectId: string): Promise<number> {
  const row = await db
    .selectFrom('contacts')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('project_id', '=', projectId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The project's contacts among these (normalised) addresses: address -> contact id. */
export async function contactIdsByEmail(db: Db, projectId: string, emails: string[]) {
  if (emails.length === 0) return new Map<string, string>();
  const rows = await db
    .selectFrom('contacts')
    .select(['id', 'email'])
    .where('project_id', '=', projectId)
    .where('email', 'in', emails)
    .execute();
  return new Map(rows.map((r) => [r.email, r.id]));
}

/** How many new contacts fit under the plan's limit, and the limit (0 = unmetered). */
export interface ContactRoom {
  fits: number;
  limit: number;
}

/**
 * The plan's contact limit, the one rule for every way contacts are created (POST /contacts, list
 * additions, tracked events, imports): refuses with 402 to create `adding` contacts past it.
 * `adding` may instead be the addresses that would become contacts: only those that are not
 * contacts yet count (looked up on a metered plan only), so known contacts pass even when a
 * downgrade left the project over its limit. With `partial`, nothing is refused: `fits` says how
 * many of them the plan still has room for.
 */
export async function checkContactLimit(
  db: Db,
  project: Pick<ProjectFacts, 'id' | 'plan'>,
  adding: number | string[],
  opts: { partial?: boolean } = {},
): Promise<ContactRoom> {
  const plan = planOrDefault(project.plan);
  let count = typeof adding === 'number' ? adding : adding.length;
  if (plan.contactLimit === 0 || count === 0) return { fits: count, limit: plan.contactLimit };
  if (typeof adding !== 'number') {
    const emails = [...new Set(adding)];
    count = emails.length - (await contactIdsByEmail(db, project.id, emails)).size;
    if (count === 0) return { fits: 0, limit: plan.contactLimit };
  }
  const held = await countContacts(db, project.id);
  const room = Math.max(0, plan.contactLimit - held);
  if (count > room && !opts.partial) {
    const upgrade = upgradeFor('contacts', plan);
    throw new PlanFeatureError(
      'contacts',
      upgrade?.id ?? null,
      `The ${plan.name} plan holds ${plan.contactLimit} contacts per project and this project has ${held}; upgrade to ${upgrade?.name ?? 'a larger plan'} for more`,
    );
  }
  return { fits: Math.min(count, room), limit: plan.contactLimit };
}

/** A contact by id or by email address, in this project (another project's is 404). */
export async function findContact(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  idOrEmail: string,
): Promise<ContactRow> {
  let query = ctx.db.selectFrom('contacts').selectAll().select(listIds).where('project_id', '=', projectId);
  if (isUuid(idOrEmail)) query = query.where('id', '=', idOrEmail);
  else if (idOrEmail.includes('@')) {
    let email: string;
    try {
      email = contactEmail(idOrEmail);
    } catch {
      throw new NotFoundError('Contact');
    }
    query = query.where('email', '=', email);
  } else throw new NotFoundError('Contact');
  const row = await query.executeTakeFirst();
  if (!row) throw new NotFoundError('Contact');
  return row;
}

async function recordConsent(
  tx: Parameters<typeof announce>[0],
  contactId: string,
  projectId: string,
  consent: ConsentInput,
) {
  await tx
    .insertInto('contact_consents')
    .values({
      contact_id: contactId,
      project_id: projectId,
      status: consent.status,
      source: consent.source,
      ip: consent.ip,
      text_shown: consent.text,
    })
    .execute();
}

/** A new contact as the API receives it; the address, lengths and property names are checked here. */
export interface NewContact {
  email: string;
  first_name?: string | null;
  last_name?: string | null;
  properties?: Record<string, PropertyValue>;
  subscribed?: boolean;
  consent?: ConsentRequest;
  /** Choices of topics (topics.ts); the others keep their defaults. */
  topics?: TopicChoice[];
}

/** A contact's changes: every field optional; a property set to null is removed. */
export interface ContactChanges extends Partial<Omit<NewContact, 'properties'>> {
  properties?: Record<string, PropertyValue | null>;
}

/** POST /contacts: 409 when the address is already a contact (compared case-insensitively). */
export async function createContact(ctx: Pick<DomainContext, 'db'>, facts: ProjectFacts, body: NewContact) {
  const email = contactEmail(body.email);
  const firstName = optionalName(body.first_name, 'first_name') ?? null;
  const lastName = optionalName(body.last_name, 'last_name') ?? null;
  const properties = checkProperties(body.properties);
  const consent = checkConsent(body.consent);
  let subscribed = optionalBoolean(body.subscribed, 'subscribed');
  if (consent && subscribed !== undefined && subscribed !== (consent.status === 'granted'))
    throw new ValidationError('`subscribed` contradicts `consent.status`: give one or make them agree');
  subscribed ??= consent ? consent.status === 'granted' : true;
  const topics = body.topics === undefined ? [] : await checkChoices(ctx.db, facts.id, body.topics);
  await checkContactLimit(ctx.db, facts, 1);
  try {
    const row = await ctx.db.transaction().execute(async (tx) => {
      const inserted = await tx
        .insertInto('contacts')
        .values({
          project_id: facts.id,
          email,
          first_name: firstName,
          last_name: lastName,
          properties: JSON.stringify(properties),
          subscribed,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      const given =
        consent ?? (body.subscribed !== undefined ? apiConsent(subscribed as boolean) : undefined);
      if (given) await recordConsent(tx, inserted.id, facts.id, given);
      await applyChoices(tx, facts.id, inserted.id, topics, 'api');
      await announce(tx, [{ type: 'contact.created', project_id: facts.id, contact_ids: [inserted.id] }]);
      return inserted;
    });
    return presentContact(row);
  } catch (err) {
    if ((err as { code?: string }).code === '23505')
      throw new ConflictError(`A contact with the email ${email} already exists in this project`);
    throw err;
  }
}

function apiConsent(subscribed: boolean): ConsentInput {
  return { status: subscribed ? 'granted' : 'withdrawn', source: 'api', ip: null, text: null };
}

/** GET /contacts/{id or email}: the contact, its lists and its consent history. */
export async function getContact(ctx: Pick<DomainContext, 'db'>, projectId: string, idOrEmail: string) {
  const row = await findContact(ctx, projectId, idOrEmail);
  const consents = await ctx.db
    .selectFrom('contact_consents')
    .selectAll()
    .where('contact_id', '=', row.id)
    .orderBy('id')
    .execute();
  return {
    ...presentContact(row),
    consent_history: consents.map((c) => ({
      status: c.status,
      source: c.source,
      ip: c.ip,
      text: c.text_shown,
      topic_id: c.topic_id,
      created_at: c.created_at.toISOString(),
    })),
  };
}

/** PATCH: names and properties (merged; null removes a key), email, subscription with consent. */
export async function updateContact(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  idOrEmail: string,
  body: ContactChanges,
) {
  const current = await findContact(ctx, projectId, idOrEmail);
  const email = body.email === undefined ? undefined : contactEmail(body.email);
  const firstName = optionalName(body.first_name, 'first_name');
  const lastName = optionalName(body.last_name, 'last_name');
  const changes = checkProperties(body.properties, 'properties', { allowNull: true });
  const consent = checkConsent(body.consent);
  let subscribed = optionalBoolean(body.subscribed, 'subscribed');
  if (consent && subscribed !== undefined && subscribed !== (consent.status === 'granted'))
    throw new ValidationError('`subscribed` contradicts `consent.status`: give one or make them agree');
  if (consent) subscribed = consent.status === 'granted';
  const topics = body.topics === undefined ? [] : await checkChoices(ctx.db, projectId, body.topics);
  const properties = { ...current.properties };
  for (const [k, v] of Object.entries(changes)) {
    if (v === null) delete properties[k];
    else properties[k] = v;
  }
  const subscriptionChanged = subscribed !== undefined && subscribed !== current.subscribed;
  try {
    await ctx.db.transaction().execute(async (tx) => {
      await tx
        .updateTable('contacts')
        .set({
          ...(email !== undefined ? { email } : {}),
          ...(firstName !== undefined ? { first_name: firstName } : {}),
          ...(lastName !== undefined ? { last_name: lastName } : {}),
          ...(subscribed !== undefined ? { subscribed } : {}),
          properties: JSON.stringify(properties),
          updated_at: new Date(),
        })
        .where('id', '=', current.id)
        .execute();
      if (consent || subscriptionChanged)
        await recordConsent(tx, current.id, projectId, consent ?? apiConsent(subscribed as boolean));
      await applyChoices(tx, projectId, current.id, topics, 'api');
      await announce(tx, [
        { type: 'contact.updated', project_id: projectId, contact_ids: [current.id] },
        ...(subscriptionChanged
          ? [
              {
                type: 'contact.subscription_changed' as const,
                project_id: projectId,
                contact_ids: [current.id],
                subscribed,
              },
            ]
          : []),
      ]);
    });
  } catch (err) {
    if ((err as { code?: string }).code === '23505')
      throw new ConflictError(`A contact with the email ${email} already exists in this project`);
    throw err;
  }
  return getContact(ctx, projectId, current.id);
}

export async function deleteContact(ctx: Pick<DomainContext, 'db'>, projectId: string, idOrEmail: string) {
  const current = await findContact(ctx, projectId, idOrEmail);
  await ctx.db.transaction().execute(async (tx) => {
    await tx.deleteFrom('contacts').where('id', '=', current.id).execute();
    await announce(tx, [{ type: 'contact.deleted', project_id: projectId, contact_ids: [current.id] }]);
  });
}

export interface ContactQuery {
  limit: number;
  offset: number;
  email?: string;
  search?: string;
  list?: string;
  segment?: string;
  subscribed?: boolean;
  created_after?: string;
  created_before?: string;
}

/**
 * GET /contacts: newest first, paginated; filters by email (exact), search (the start of the
 * address, through the pattern index), list, segment, subscription, creation.
 */
export async function listContacts(ctx: DomainContext, projectId: string, q: ContactQuery) {
  const after = dateParam(q.created_after, 'created_after');
  const before = dateParam(q.created_before, 'created_before');
  const condition = q.segment !== undefined ? await segmentCondition(ctx, projectId, q.segment) : undefined;
  const query = async (db: Db | Tx) => {
    let base = db.selectFrom('contacts').where('contacts.project_id', '=', projectId);
    if (q.email !== undefined) {
      const email = q.email.trim().toLowerCase();
      base = base.where('contacts.email', '=', email);
    }
    if (q.search !== undefined && q.search.trim() !== '') {
      base = base.where('contacts.email', 'like', addressPrefixPattern(q.search));
    }
    if (q.subscribed !== undefined) base = base.where('contacts.subscribed', '=', q.subscribed);
    if (after) base = base.where('contacts.created_at', '>=', after);
    if (before) base = base.where('contacts.created_at', '<', before);
    if (q.list !== undefined) {
      if (!isUuid(q.list)) throw new ValidationError('`list` must be a list id');
      const list = q.list;
      base = base.where((eb) =>
        eb.exists(
          eb
            .selectFrom('list_members as lm')
            .innerJoin('lists as l', 'l.id', 'lm.list_id')
            .whereRef('lm.contact_id', '=', 'contacts.id')
            .where('lm.list_id', '=', list)
            .where('l.project_id', '=', projectId)
            .select('lm.contact_id'),
        ),
      );
    }
    if (condition) base = base.where(condition);
    return Promise.all([
      base
        .selectAll('contacts')
        .select(listIds)
        .orderBy('contacts.created_at', 'desc')
        .orderBy('contacts.id', 'desc')
        .limit(q.limit)
        .offset(q.offset)
        .execute(),
      base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
    ]);
  };
  const [rows, total] = condition ? await withSegmentSettings(ctx, query) : await query(ctx.db);
  return { data: rows.map(presentContact), total: Number(total.n), limit: q.limit, offset: q.offset };
}
