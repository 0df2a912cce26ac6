import { type Selectable, sql } from 'kysely';
import type { WebhookDeliveriesTable } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { NotFoundError, ValidationError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import { getEndpoint } from './endpoints.ts';

/**
 * An endpoint's delivery log read by message (issue 51, Resend's webhook events): every attempt
 * of one message is a row of webhook_deliveries with the same `message_id` (the `webhook-id`
 * header); the message is named by its first row's id. A first row is one a fan-out wrote
 * (`fanout_key`), or a row no earlier row of its message precedes (a test event's).
 */

type Row = Selectable<WebhookDeliveriesTable>;

export interface DeliveredMessage {
  /** The id of its first row. */
  id: string;
  message_id: string;
  event_type: string;
  payload: Record<string, unknown>;
  created_at: Date;
  /** Its latest row: where the message stands. */
  latest: Pick<Row, 'id' | 'status' | 'attempt' | 'next_retry_at'>;
}

const FIRST = sql<boolean>`(d.fanout_key is not null or not exists (
  select 1 from webhook_deliveries p
   where p.endpoint_id = d.endpoint_id and p.message_id = d.message_id and (p.created_at, p.id) < (d.created_at, d.id)))`;

const WITH_LATEST = sql`
  select d.id, d.message_id, d.event_type, d.payload, d.created_at,
         json_build_object('id', l.id, 'status', l.status, 'attempt', l.attempt, 'next_retry_at', l.next_retry_at) as latest
    from webhook_deliveries d
    cross join lateral (
      select id, status, attempt, next_retry_at from webhook_deliveries l
       where l.endpoint_id = d.endpoint_id and l.message_id = d.message_id and l.created_at >= d.created_at
       order by l.created_at desc, l.id desc limit 1) l`;

function fromJson(r: DeliveredMessage & { latest: { next_retry_at: unknown } }): DeliveredMessage {
  const next = r.latest.next_retry_at;
  return { ...r, latest: { ...r.latest, next_retry_at: next ? new Date(String(next)) : null } };
}

/** An endpoint's messages, newest first, by cursor (`after` / `before` a message's id). */
export async function deliveredMessages(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  endpointId: string,
  cursor: { limit: number; after?: string; before?: string },
) {
  const endpoint = await getEndpoint(ctx, projectId, endpointId);
  if (cursor.after !== undefined && cursor.before !== undefined)
    throw new ValidationError('Give `after` or `before`, not both');
  const anchorId = cursor.after ?? cursor.before;
  if (anchorId !== undefined && !(isUuid(anchorId) && (await firstRow(ctx, endpoint.id, anchorId))))
    throw new ValidationError(
      `\`${cursor.after ? 'after' : 'before'}\` must be the id of an item of this list`,
    );
  const newer = cursor.before !== undefined;
  const at = sql`(select created_at, id from webhook_deliveries where id = ${anchorId ?? null})`;
  const { rows } = await sql<DeliveredMessage & { latest: { next_retry_at: unknown } }>`
    ${WITH_LATEST}
   where d.endpoint_id = ${endpoint.id} and ${FIRST}
     ${anchorId ? (newer ? sql`and (d.created_at, d.id) > ${at}` : sql`and (d.created_at, d.id) < ${at}`) : sql``}
   order by ${newer ? sql`d.created_at asc, d.id asc` : sql`d.created_at desc, d.id desc`}
   limit ${cursor.limit + 1}`.execute(ctx.db);
  const shown = rows.slice(0, cursor.limit).map(fromJson);
  return { rows: newer ? shown.reverse() : shown, has_more: rows.length > cursor.limit };
}

async function firstRow(ctx: Pick<DomainContext, 'db'>, endpointId: string, id: string) {
  const { rows } = await sql<DeliveredMessage & { latest: { next_retry_at: unknown } }>`
    ${WITH_LATEST} where d.endpoint_id = ${endpointId} and d.id = ${id} and ${FIRST}`.execute(ctx.db);
  return rows[0] ? fromJson(rows[0]) : undefined;
}

/** One message of an endpoint's log, by its id (404 when it is none). */
export async function deliveredMessage(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  endpointId: string,
  id: string,
): Promise<DeliveredMessage> {
  const endpoint = await getEndpoint(ctx, projectId, endpointId);
  const found = isUuid(id) ? await firstRow(ctx, endpoint.id, id) : undefined;
  if (!found) throw new NotFoundError('Webhook event');
  return found;
}

/** The attempts made of one message (its rows not waiting for their turn), newest first, by cursor. */
export async function messageAttempts(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  endpointId: string,
  id: string,
  cursor: { limit: number; after?: string; before?: string },
) {
  const message = await deliveredMessage(ctx, projectId, endpointId, id);
  if (cursor.after !== undefined && cursor.before !== undefined)
    throw new ValidationError('Give `after` or `before`, not both');
  const anchorId = cursor.after ?? cursor.before;
  const attempts = await ctx.db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('endpoint_id', '=', endpointId)
    .where('message_id', '=', message.message_id)
    .where('created_at', '>=', message.created_at)
    .where('status', '!=', 'pending')
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  const at = anchorId === undefined ? -1 : attempts.findIndex((a) => a.id === anchorId);
  if (anchorId !== undefined && at < 0)
    throw new ValidationError(
      `\`${cursor.after ? 'after' : 'before'}\` must be the id of an item of this list`,
    );
  const [from, to] =
    anchorId === undefined
      ? [0, cursor.limit]
      : cursor.after
        ? [at + 1, at + 1 + cursor.limit]
        : [Math.max(0, at - cursor.limit), at];
  return {
    rows: attempts.slice(from, to),
    has_more: cursor.before !== undefined ? from > 0 : to < attempts.length,
  };
}
