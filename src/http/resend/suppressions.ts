import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { Type } from 'typebox';
import { normalizeEmail } from '../../domain/core/addresses.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { NotFoundError, ValidationError } from '../../domain/core/errors.ts';
import { isUuid } from '../../domain/core/ids.ts';
import { addSuppression, removeSuppression, suppress } from '../../domain/emails/suppressions.ts';
import { projectOf } from '../auth.ts';
import { typed } from '../schemas.ts';
import { CursorQuery, listOf } from './schemas.ts';
import { derivedId, derivedIdSql, inResendFields, ORIGIN_REASONS, SUPPRESSION_ORIGIN } from './vocabulary.ts';

/**
 * Suppressions (issue 51) over Posthorn's suppression list (domain/emails/suppressions.ts): an
 * entry's id is derived from its address, so `get` and `remove` take either, as Resend's do. An
 * address added here is `manual` (it blocks every stream).
 */

const project = { auth: 'project' as const };
const MAX_BATCH = 100;

interface Row {
  email: string;
  reason: string;
  source_email_id: string | null;
  created_at: Date;
}

const entry = (projectId: string, r: Row) =>
  inResendFields('suppression', {
    id: derivedId(projectId, r.email),
    email: r.email,
    reason: SUPPRESSION_ORIGIN[r.reason] ?? 'manual',
    source_email_id: r.source_email_id,
    created_at: r.created_at.toISOString(),
  });

/** The entry an id or an address names, or undefined. */
async function findEntry(ctx: DomainContext, projectId: string, idOrEmail: string): Promise<Row | undefined> {
  const byId = isUuid(idOrEmail);
  if (!byId && !idOrEmail.includes('@')) return undefined;
  const { rows } = await sql<Row>`
    select email, reason, source_email_id, created_at from suppressions
     where project_id = ${projectId} and ${
       byId
         ? sql`${derivedIdSql(sql`project_id::text`, sql`email`)} = ${idOrEmail.toLowerCase()}`
         : sql`email = ${idOrEmail.trim().toLowerCase()}`
}`.execute(ctx.db);
  return rows[0];
}

async function page(
  ctx: DomainContext,
  projectId: string,
  q: { limit?: number; after?: string; before?: string; origin?: unknown },
) {
  if (q.after !== undefined && q.before !== undefined)
    throw new ValidationError('Give `after` or `before`, not both');
  if (q.origin !== undefined && (typeof q.origin !== 'string' || !ORIGIN_REASONS[q.origin]))
    throw new ValidationError('`origin` must be bounce, complaint or manual');
  const reasons = typeof q.origin === 'string' ? ORIGIN_REASONS[q.origin] : null;
  const anchorId = q.after ?? q.before;
  const anchor = anchorId === undefined ? undefined : await findEntry(ctx, projectId, anchorId);
  if (anchorId !== undefined && !anchor)
    throw new ValidationError(`\`${q.after ? 'after' : 'before'}\` must be the id of an item of this list`);
  const newer = q.before !== undefined;
  const limit = q.limit ?? 20;
  const at = sql`(select created_at, email from suppressions where project_id = ${projectId} and email = ${anchor?.email ?? null})`;
  const { rows } = await sql<Row>`
    select email, reason, source_email_id, created_at from suppressions
     where project_id = ${projectId}
       ${reasons ? sql`and reason = any(${reasons}::text[])` : sql``}
       ${anchor ? (newer ? sql`and (created_at, email) > ${at}` : sql`and (created_at, email) < ${at}`) : sql``}
     order by ${newer ? sql`created_at asc, email asc` : sql`created_at desc, email desc`}
     limit ${limit + 1}`.execute(ctx.db);
  const shown = rows.slice(0, limit);
  return listOf(
    (newer ? shown.reverse() : shown).map((r) => entry(projectId, r)),
    rows.length > limit,
  );
}

/** The addresses of a batch, each checked as one added alone would be (400 naming its index). */
function batchEmails(emails: string[]): string[] {
  if (emails.length < 1 || emails.length > MAX_BATCH)
    throw new ValidationError(`\`emails\` must hold 1 to ${MAX_BATCH} addresses`);
  return emails.map((e, i) => {
    try {
      return normalizeEmail(e).toLowerCase();
    } catch (err) {
      throw new ValidationError(`\`emails[${i}]\`: ${(err as Error).message}`);
    }
  });
}

export async function resendSuppressionRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const Key = Type.Object({ id: Type.String() });
  app.post(
    '/suppressions',
    { config: project, schema: { hide: true, body: Type.Object({ email: Type.String() }) } },
    async (request, reply) => {
      const added = await addSuppression(ctx, projectOf(request), { email: request.body.email });
      return reply.code(201).send({ object: 'suppression', id: derivedId(projectOf(request), added.email) });
    },
  );
  app.get(
    '/suppressions',
    { config: project, schema: { hide: true, querystring: CursorQuery } },
    async (request) => page(ctx, projectOf(request), request.query),
  );
  app.get('/suppressions/:id', { config: project, schema: { hide: true, params: Key } }, async (request) => {
    const found = await findEntry(ctx, projectOf(request), request.params.id);
    if (!found) throw new NotFoundError('Suppression');
    return { object: 'suppression', ...entry(projectOf(request), found) };
  });
  app.delete(
    '/suppressions/:id',
    { config: project, schema: { hide: true, params: Key } },
    async (request) => {
      const found = await findEntry(ctx, projectOf(request), request.params.id);
      if (!found) throw new NotFoundError('Suppression');
      await removeSuppression(ctx, projectOf(request), found.email);
      return { object: 'suppression', id: derivedId(projectOf(request), found.email), deleted: true };
    },
  );
  app.post(
    '/suppressions/batch/add',
    { config: project, schema: { hide: true, body: Type.Object({ emails: Type.Array(Type.String()) }) } },
    async (request, reply) => {
      const projectId = projectOf(request);
      const emails = [...new Set(batchEmails(request.body.emails))];
      await suppress(
        ctx.db,
        emails.map((email) => ({ projectId, email, reason: 'manual' as const })),
      );
      return reply
        .code(201)
        .send({ data: emails.map((e) => ({ object: 'suppression', id: derivedId(projectId, e) })) });
    },
  );
  app.post(
    '/suppressions/batch/remove',
    {
      config: project,
      schema: {
        hide: true,
        body: Type.Object({
          emails: Type.Optional(Type.Array(Type.String())),
          ids: Type.Optional(Type.Array(Type.String())),
        }),
      },
    },
    async (request) => {
      const projectId = projectOf(request);
      const { emails, ids } = request.body;
      if ((emails === undefined) === (ids === undefined))
        throw new ValidationError('Give `emails` or `ids`, one of them');
      const given = emails ? batchEmails(emails) : (ids as string[]);
      if (given.length < 1 || given.length > MAX_BATCH)
        throw new ValidationError(`\`ids\` must hold 1 to ${MAX_BATCH} ids`);
      const data = [];
      for (const key of given) {
        const found = await findEntry(ctx, projectId, key);
        if (found) await removeSuppression(ctx, projectId, found.email);
        const id = found ? derivedId(projectId, found.email) : isUuid(key) ? key : derivedId(projectId, key);
        data.push({ object: 'suppression', id, deleted: found !== undefined });
      }
      return { data };
    },
  );
}
