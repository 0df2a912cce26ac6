import { sql } from 'kysely';
import pg from 'pg';
import type { Db, Tx } from '../../db/database.ts';
import { normalizeEmail } from '../core/addresses.ts';
import type { DomainContext } from '../core/context.ts';
import { NotFoundError, ValidationError } from '../core/errors.ts';
import { readPage } from '../core/pages.ts';
import type { Stream } from '../plans/project-facts.ts';

/** Why an address is suppressed: the first two come from delivery, the last two from people. */
export const SUPPRESSION_REASONS = ['hard_bounce', 'complaint', 'unsubscribe', 'manual'] as const;
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number];

/** The reasons a caller may give when adding an address by hand. */
export const MANUAL_SUPPRESSION_REASONS = ['manual', 'unsubscribe'] as const;

/** An address added by hand; `reason` defaults to `manual`. */
export interface SuppressionInput {
  email: string;
  reason?: (typeof MANUAL_SUPPRESSION_REASONS)[number];
}

/** Hard bounces, complaints and manual entries block every stream; unsubscribes only marketing and automation. */
export function reasonsBlocking(stream: Stream): SuppressionReason[] {
  return stream === 'transactional'
    ? ['hard_bounce', 'complaint', 'manual']
    : ['hard_bounce', 'complaint', 'manual', 'unsubscribe'];
}

/** The subset of `emails` (lower-cased) suppressed for this stream. */
export async function suppressedAmong(
  db: Db | Tx | pg.Pool,
  projectId: string,
  emails: string[],
  stream: Stream,
): Promise<Set<string>> {
  if (emails.length === 0) return new Set();
  const lower = [...new Set(emails.map((e) => e.toLowerCase()))];
  if (db instanceof pg.Pool) {
    // the accept path: a prepared statement, planned once per connection
    const { rows } = await db.query<{ email: string }>({
      name: 'posthorn_suppressed_among',
      text: 'select email from suppressions where project_id = $1 and email = any($2::text[]) and reason = any($3::text[])',
      values: [projectId, lower, reasonsBlocking(stream)],
    });
    return new Set(rows.map((r) => r.email));
  }
  const rows = await db
    .selectFrom('suppressions')
    .select('email')
    .where('project_id', '=', projectId)
    .where('email', 'in', lower)
    .where('reason', 'in', reasonsBlocking(stream))
    .execute();
  return new Set(rows.map((r) => r.email));
}

/** Adds addresses to the suppression list (first reason wins; a complaint upgrades a weaker reason). */
export async function suppress(
  db: Db | Tx,
  entries: {
    projectId: string;
    email: string;
    reason: SuppressionReason;
    sourceEmailId?: string | null;
    detail?: string | null;
  }[],
): Promise<void> {
  if (entries.length === 0) return;
  await db
    .insertInto('suppressions')
    .values(
      entries.map((e) => ({
        project_id: e.projectId,
        email: e.email.toLowerCase(),
        reason: e.reason,
        source_email_id: e.sourceEmailId ?? null,
        detail: e.detail ?? null,
      })),
    )
    .onConflict((oc) =>
      oc.columns(['project_id', 'email']).doUpdateSet({
        reason: sql`case when excluded.reason in ('hard_bounce', 'complaint') then excluded.reason else suppressions.reason end`,
      }),
    )
    .execute();
}

function present(row: {
  email: string;
  reason: string;
  source_email_id: string | null;
  detail: string | null;
  created_at: Date;
}) {
  return {
    object: 'suppression' as const,
    email: row.email,
    reason: row.reason,
    source_email_id: row.source_email_id,
    detail: row.detail,
    created_at: row.created_at.toISOString(),
  };
}

/** GET /suppressions: newest first, paginated, optionally of one reason. */
export async function listSuppressions(
  ctx: DomainContext,
  projectId: string,
  page: { limit: number; offset: number; reason?: SuppressionReason },
) {
  let query = ctx.db.selectFrom('suppressions').where('project_id', '=', projectId);
  if (page.reason) query = query.where('reason', '=', page.reason);
  const { rows, ...found } = await readPage(
    query,
    (base) => base.selectAll().orderBy('created_at', 'desc').orderBy('email'),
    page,
  );
  return { data: rows.map(present), ...found };
}

/** POST /suppressions: adds an address by hand; an address already listed keeps its reason. */
export async function addSuppression(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  input: SuppressionInput,
) {
  const email = normalizeEmail(input.email).toLowerCase();
  const reason = input.reason ?? 'manual';
  if (!(MANUAL_SUPPRESSION_REASONS as readonly string[]).includes(reason)) {
    throw new ValidationError(
      '`reason` must be "manual" (blocks every stream) or "unsubscribe" (blocks marketing and automation)',
    );
  }
  await suppress(ctx.db, [{ projectId, email, reason }]);
  const row = await ctx.db
    .selectFrom('suppressions')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('email', '=', email)
    .executeTakeFirstOrThrow();
  return present(row);
}

export async function removeSuppression(ctx: Pick<DomainContext, 'db'>, projectId: string, email: string) {
  const result = await ctx.db
    .deleteFrom('suppressions')
    .where('project_id', '=', projectId)
    .where('email', '=', email.trim().toLowerCase())
    .executeTakeFirst();
  if (Number(result.numDeletedRows) === 0) throw new NotFoundError('Suppression');
}
