import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import { deliveryJobKey } from '../../db/enqueue.ts';
import { EMAIL_STATUSES, type EmailStatus, type EmailsTable } from '../../db/schema.ts';

export { EMAIL_STATUSES };

import type { DomainContext } from '../core/context.ts';
import { parseIsoDate } from '../core/dates.ts';
import { ConflictError, ValidationError } from '../core/errors.ts';
import { findInProject } from '../core/find.ts';
import { renderStored } from '../templates/send.ts';

type EmailRow = Selectable<EmailsTable>;

export function presentEmail(row: EmailRow) {
  return {
    id: row.id,
    object: 'email' as const,
    stream: row.stream,
    status: row.status,
    message_id: row.message_id,
    from: row.from_header,
    to: row.to_addresses,
    cc: row.cc_addresses,
    bcc: row.bcc_addresses,
    reply_to: row.reply_to,
    subject: row.subject,
    tags: row.tags,
    headers: row.headers,
    attachments: row.attachments,
    size_bytes: row.size_bytes,
    attempts: row.attempts,
    last_response: row.last_response,
    scheduled_at: row.scheduled_at?.toISOString() ?? null,
    next_attempt_at: row.next_attempt_at?.toISOString() ?? null,
    sent_at: row.sent_at?.toISOString() ?? null,
    template:
      row.template_id === null ? null : { id: row.template_id, version: row.template_version as number },
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

async function findEmail(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string): Promise<EmailRow> {
  return findInProject(ctx.db, 'emails', 'Email', projectId, id);
}

/**
 * One message, its bodies and its event timeline (oldest first). Past the retention period
 * (POSTHORN_RETENTION_MESSAGE_BODIES_DAYS) the bodies are gone: html and text are null and
 * `body_pruned_at` says when they were removed; the rest of the message is kept.
 */
export async function getEmail(ctx: DomainContext, projectId: string, id: string) {
  const row = await findEmail(ctx, projectId, id);
  const events = await ctx.db
    .selectFrom('email_events')
    .selectAll()
    .where('email_id', '=', id)
    .orderBy('id')
    .execute();
  const stored = (await renderStored(ctx, [row])).get(row.id);
  const rendered = stored && 'html' in stored ? stored : undefined;
  return {
    ...presentEmail(row),
    html: rendered?.html ?? row.html,
    text: rendered?.text ?? row.text_body,
    body_pruned_at: row.body_pruned_at?.toISOString() ?? null,
    events: events.map((e) => ({
      object: 'email_event' as const,
      type: e.type,
      recipient: e.recipient,
      detail: e.detail,
      created_at: e.created_at.toISOString(),
    })),
  };
}

export interface EmailFilters {
  limit: number;
  offset: number;
  status?: string;
  to?: string;
  tag?: string;
  created_after?: string;
  created_before?: string;
}

function date(value: string, name: string): Date {
  const d = parseIsoDate(value);
  if (!d)
    throw new ValidationError(
      `Query parameter \`${name}\` must be an ISO 8601 date or date-time such as 2026-11-01T09:00:00Z`,
    );
  return d;
}

/**
 * Past this many messages in the range a status filter would read, its `total` is the planner's
 * estimate: no index names `status` (delivery's updates stay HOT, migration 0026), so an exact
 * count by status reads every message of the range.
 */
export const EXACT_STATUS_COUNT_UP_TO = 100_000;

/** The rows PostgreSQL's planner expects a query to return (EXPLAIN; nothing is read). */
async function plannedRows(query: { explain(format: 'json'): Promise<Record<string, unknown>[]> }) {
  const [row] = await query.explain('json');
  const plan = (row['QUERY PLAN'] as { Plan: { 'Plan Rows': number } }[])[0].Plan;
  return Math.round(plan['Plan Rows']);
}

/**
 * Messages of the project, newest first, filtered by status, recipient, tag (`name` or `name:value`)
 * and date. `total` is exact, except with a status filter over more than EXACT_STATUS_COUNT_UP_TO
 * messages, where it is estimated and `total_estimated` says so.
 */
export async function listEmails(ctx: Pick<DomainContext, 'db'>, projectId: string, f: EmailFilters) {
  let range = ctx.db.selectFrom('emails').where('project_id', '=', projectId);
  if (f.to) {
    const to = f.to.trim().toLowerCase();
    // through the emails_recipients index (migration 0025): the bare addresses of To, Cc and Bcc
    range = range.where(sql<boolean>`recipients @> array[${to}]::text[]`);
  }
  if (f.tag) {
    const [name, value] = f.tag.split(':', 2);
    range = range.where(
      sql<boolean>`tags @> ${JSON.stringify([value === undefined ? { name } : { name, value }])}::jsonb`,
    );
  }
  if (f.created_after) range = range.where('created_at', '>=', date(f.created_after, 'created_after'));
  if (f.created_before) range = range.where('created_at', '<', date(f.created_before, 'created_before'));
  let query = range;
  if (f.status) {
    if (!EMAIL_STATUSES.includes(f.status as EmailStatus))
      throw new ValidationError(`Query parameter \`status\` must be one of ${EMAIL_STATUSES.join(', ')}`);
    query = query.where('status', '=', f.status as EmailStatus);
  }
  // one recipient's messages are few among many: found through the index, then sorted (walking the
  // newest-first index instead would read every message when the address has only a few)
  const newestFirst = f.to ? sql`created_at + interval '0 seconds'` : sql`created_at`;
  const count = async () => {
    const counted = query.select((eb) => eb.fn.countAll<number>().as('n'));
    if (f.status && (await plannedRows(range.select('id'))) > EXACT_STATUS_COUNT_UP_TO)
      return { total: await plannedRows(query.select('id')), estimated: true };
    return { total: Number((await counted.executeTakeFirstOrThrow()).n), estimated: false };
  };
  const [rows, counted] = await Promise.all([
    query.selectAll().orderBy(newestFirst, 'desc').orderBy('id').limit(f.limit).offset(f.offset).execute(),
    count(),
  ]);
  return {
    data: rows.map(presentEmail),
    total: counted.total,
    total_estimated: counted.estimated,
    limit: f.limit,
    offset: f.offset,
  };
}

/** Cancels a scheduled message; anything already on its way is a 409. */
export async function cancelEmail(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  const row = await findEmail(ctx, projectId, id);
  const cancelled = await ctx.db.transaction().execute(async (tx) => {
    const updated = await tx
      .updateTable('emails')
      .set({ status: 'cancelled', updated_at: new Date() })
      .where('id', '=', id)
      .where('status', '=', 'scheduled')
      .returningAll()
      .executeTakeFirst();
    if (!updated) return null;
    await tx
      .insertInto('email_events')
      .values({ email_id: id, project_id: projectId, type: 'cancelled', recipient: null, detail: '{}' })
      .execute();
    await sql`select graphile_worker.remove_job(${deliveryJobKey(id)})`.execute(tx);
    return updated;
  });
  if (!cancelled)
    throw new ConflictError(`Only scheduled emails can be cancelled; this one is ${row.status}`);
  return presentEmail(cancelled);
}
