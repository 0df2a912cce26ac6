import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import { deliveryJobKey } from '../../db/enqueue.ts';
import type { EmailStatus, EmailsTable } from '../../db/schema.ts';
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

async function findEmail(ctx: DomainContext, projectId: string, id: string): Promise<EmailRow> {
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

const STATUSES: EmailStatus[] = [
  'scheduled',
  'queued',
  'sending',
  'sent',
  'delivered',
  'deferred',
  'bounced',
  'complained',
  'failed',
  'suppressed',
  'cancelled',
];

function date(value: string, name: string): Date {
  const d = parseIsoDate(value);
  if (!d)
    throw new ValidationError(
      `Query parameter \`${name}\` must be an ISO 8601 date or date-time such as 2026-11-01T09:00:00Z`,
    );
  return d;
}

/** Messages of the project, newest first, filtered by status, recipient, tag (`name` or `name:value`) and date. */
export async function listEmails(ctx: DomainContext, projectId: string, f: EmailFilters) {
  let query = ctx.db.selectFrom('emails').where('project_id', '=', projectId);
  if (f.status) {
    if (!STATUSES.includes(f.status as EmailStatus))
      throw new ValidationError(`Query parameter \`status\` must be one of ${STATUSES.join(', ')}`);
    query = query.where('status', '=', f.status as EmailStatus);
  }
  if (f.to) {
    const to = f.to.trim().toLowerCase();
    query =
      query.where(sql<boolean>`exists (select 1 from unnest(to_addresses || cc_addresses || bcc_addresses) a
                                              where lower(a) = ${to} or lower(a) like ${`%<${to}>`})`);
  }
  if (f.tag) {
    const [name, value] = f.tag.split(':', 2);
    query = query.where(
      sql<boolean>`tags @> ${JSON.stringify([value === undefined ? { name } : { name, value }])}::jsonb`,
    );
  }
  if (f.created_after) query = query.where('created_at', '>=', date(f.created_after, 'created_after'));
  if (f.created_before) query = query.where('created_at', '<', date(f.created_before, 'created_before'));
  const [rows, total] = await Promise.all([
    query.selectAll().orderBy('created_at', 'desc').orderBy('id').limit(f.limit).offset(f.offset).execute(),
    query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { data: rows.map(presentEmail), total: Number(total.n), limit: f.limit, offset: f.offset };
}

/** Cancels a scheduled message; anything already on its way is a 409. */
export async function cancelEmail(ctx: DomainContext, projectId: string, id: string) {
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
