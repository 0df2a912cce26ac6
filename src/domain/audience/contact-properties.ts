import { sql } from 'kysely';
import type { DomainContext } from '../core/context.ts';
import { NotFoundError } from '../core/errors.ts';
import { PROPERTY_KEY } from './fields.ts';
import { announce, MAX_IDS_PER_JOB } from './triggers.ts';

/**
 * The property keys a project's contacts hold (the Resend door's contact properties). Posthorn's
 * contact properties are free-form: a key needs no definition and exists while a contact has it,
 * so the keys are read from the contacts themselves, each with the type its values share (`number`
 * when every value is a number, else `string`) and when it first appeared.
 */

export interface PropertyKey {
  key: string;
  type: 'string' | 'number';
  /** The oldest contact holding it. */
  first_seen: string;
  contacts: number;
}

async function keysOf(ctx: Pick<DomainContext, 'db'>, projectId: string, key?: string) {
  const { rows } = await sql<{ key: string; numbers: boolean; first_seen: Date; contacts: number }>`
    select p.key, bool_and(jsonb_typeof(p.value) = 'number') as numbers,
           min(c.created_at) as first_seen, count(*)::int as contacts
      from contacts c, jsonb_each(c.properties) p
     where c.project_id = ${projectId} ${key === undefined ? sql`` : sql`and c.properties ? ${key}`}
       ${key === undefined ? sql`` : sql`and p.key = ${key}`}
     group by p.key order by p.key`.execute(ctx.db);
  return rows.map(
    (r): PropertyKey => ({
      key: r.key,
      type: r.numbers ? 'number' : 'string',
      first_seen: new Date(r.first_seen).toISOString(),
      contacts: Number(r.contacts),
    }),
  );
}

/** Every key the project's contacts hold, in order of name. */
export function listPropertyKeys(ctx: Pick<DomainContext, 'db'>, projectId: string) {
  return keysOf(ctx, projectId);
}

/** One key, or 404 when no contact holds it. */
export async function getPropertyKey(ctx: Pick<DomainContext, 'db'>, projectId: string, key: string) {
  if (!PROPERTY_KEY.test(key)) throw new NotFoundError('Contact property');
  const [found] = await keysOf(ctx, projectId, key);
  if (!found) throw new NotFoundError('Contact property');
  return found;
}

/**
 * Removes a key from every contact of the project that holds it (as PATCH /contacts/{id} with the
 * key set to null would, one contact at a time), announcing `contact.updated` for each.
 */
export async function removePropertyKey(ctx: Pick<DomainContext, 'db'>, projectId: string, key: string) {
  const found = await getPropertyKey(ctx, projectId, key);
  await ctx.db.transaction().execute(async (tx) => {
    const changed = await tx
      .updateTable('contacts')
      .set({ properties: sql`properties - ${key}::text`, updated_at: new Date() })
      .where('project_id', '=', projectId)
      .where(sql<boolean>`properties ? ${key}::text`)
      .returning('id')
      .execute();
    const ids = changed.map((c) => c.id);
    const jobs = [];
    for (let i = 0; i < ids.length; i += MAX_IDS_PER_JOB)
      jobs.push({
        type: 'contact.updated' as const,
        project_id: projectId,
        contact_ids: ids.slice(i, i + MAX_IDS_PER_JOB),
      });
    await announce(tx, jobs);
  });
  return found;
}
