import type { Selectable } from 'kysely';
import type { Tx } from '../../db/database.ts';
import type { WebhookDeliveriesTable, WebhookEndpointsTable } from '../../db/schema.ts';
import { checkDescription } from '../audience/fields.ts';
import type { DomainContext } from '../core/context.ts';
import { ValidationError } from '../core/errors.ts';
import { findInProject } from '../core/find.ts';
import { readPage } from '../core/pages.ts';
import { requireFeature } from '../plans/plans.ts';
import type { ProjectFacts } from '../plans/project-facts.ts';
import { endpointNaming, webhookPolicy } from './policy.ts';
import { withSvixHeaders } from './resend-dialect.ts';
import { newWebhookSecret, webhookHeaders } from './signing.ts';
import { checkWebhookUrl, postWebhook, resolveTarget } from './target.ts';

// its home was here: attachments by URL and flows' webhook steps import it from this module
export { targetPolicy } from './policy.ts';

type EndpointRow = Selectable<WebhookEndpointsTable>;

/** The event kinds an endpoint can subscribe to. */
export const WEBHOOK_EVENTS = [
  'email.sent',
  'email.delivered',
  'email.deferred',
  'email.bounced',
  'email.complained',
  'email.failed',
  'email.suppressed',
  'email.opened',
  'email.clicked',
  'email.unsubscribed',
  'email.received',
  'contact.created',
  'contact.updated',
  'contact.deleted',
  'contact.unsubscribed',
  'contact.topic_subscribed',
  'contact.topic_unsubscribed',
  'domain.verified',
  'domain.failed',
  'breaker.tripped',
  'dmarc.unknown_source',
  'dmarc.alignment_dropped',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number];

/** POST /webhooks: where to deliver and which events; `description` is free text (null for none). */
export interface CreateWebhookInput {
  url: string;
  events: WebhookEventType[];
  description?: string | null;
  /** How deliveries are written: Posthorn's (the default) or Resend's (resend-dialect.ts). */
  dialect?: 'posthorn' | 'resend';
}

/** PATCH /webhooks/{id}: only the fields present change; `enabled: true` clears the disabled reason. */
export interface UpdateWebhookInput {
  url?: string;
  events?: WebhookEventType[];
  description?: string | null;
  enabled?: boolean;
}

const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;
const MAX_ENDPOINTS = 20;

function present(row: EndpointRow, secret?: string) {
  return {
    id: row.id,
    object: 'webhook' as const,
    url: row.url,
    events: row.events,
    description: row.description,
    enabled: row.enabled,
    disabled_reason: row.disabled_reason,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    ...(secret ? { secret } : {}),
  };
}

function checkEvents(value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0)
    throw new ValidationError(
      `\`events\` must be a non-empty array of event types: ${WEBHOOK_EVENTS.join(', ')}`,
    );
  for (const [i, e] of value.entries()) {
    if (typeof e !== 'string' || !(WEBHOOK_EVENTS as readonly string[]).includes(e))
      throw new ValidationError(
        `\`events[${i}]\`: unknown event type "${String(e).slice(0, 60)}"; known types: ${WEBHOOK_EVENTS.join(', ')}`,
      );
  }
  return [...new Set(value as string[])];
}

async function findEndpoint(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  id: string,
): Promise<EndpointRow> {
  return findInProject(ctx.db, 'webhook_endpoints', 'Webhook', projectId, id);
}

/** POST /webhooks: the secret is shown in this answer (and on rotation) only; stored encrypted. */
export async function createEndpoint(ctx: DomainContext, facts: ProjectFacts, body: CreateWebhookInput) {
  requireFeature(facts.plan, 'webhooks');
  const policy = webhookPolicy(ctx);
  const url = checkWebhookUrl(body.url, policy, endpointNaming(policy));
  const events = checkEvents(body.events);
  const description = checkDescription(body.description) ?? null;
  await resolveTarget(url, policy, endpointNaming(policy));
  const count = await ctx.db
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('project_id', '=', facts.id)
    .executeTakeFirstOrThrow();
  if (Number(count.n) >= MAX_ENDPOINTS)
    throw new ValidationError(`A project has at most ${MAX_ENDPOINTS} webhook endpoints`);
  const secret = newWebhookSecret();
  const row = await ctx.db
    .insertInto('webhook_endpoints')
    .values({
      project_id: facts.id,
      url: url.toString(),
      events,
      description,
      secret_enc: ctx.secrets.encrypt(secret),
      ...(body.dialect ? { dialect: body.dialect } : {}),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return present(row, secret);
}

export async function listEndpoints(ctx: Pick<DomainContext, 'db'>, projectId: string) {
  const rows = await ctx.db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('project_id', '=', projectId)
    .orderBy('created_at')
    .execute();
  return { data: rows.map((r) => present(r)) };
}

export async function getEndpoint(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  return present(await findEndpoint(ctx, projectId, id));
}

export async function updateEndpoint(
  ctx: DomainContext,
  projectId: string,
  id: string,
  body: UpdateWebhookInput,
) {
  const current = await findEndpoint(ctx, projectId, id);
  const policy = webhookPolicy(ctx);
  const url = body.url === undefined ? undefined : checkWebhookUrl(body.url, policy, endpointNaming(policy));
  if (url) await resolveTarget(url, policy, endpointNaming(policy));
  const events = body.events === undefined ? undefined : checkEvents(body.events);
  const description = checkDescription(body.description);
  if (body.enabled !== undefined && typeof body.enabled !== 'boolean')
    throw new ValidationError('`enabled` must be true or false');
  const row = await ctx.db
    .updateTable('webhook_endpoints')
    .set({
      ...(url ? { url: url.toString() } : {}),
      ...(events ? { events } : {}),
      ...(description !== undefined ? { description } : {}),
      ...(body.enabled !== undefined
        ? {
            enabled: body.enabled,
            ...(body.enabled ? { disabled_reason: null, failing_since: null } : {}),
          }
        : {}),
      updated_at: new Date(),
    })
    .where('id', '=', current.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return present(row);
}

export async function deleteEndpoint(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  const current = await findEndpoint(ctx, projectId, id);
  await ctx.db.deleteFrom('webhook_endpoints').where('id', '=', current.id).execute();
}

/** A new secret; the old one keeps signing alongside it for 24 hours. */
export async function rotateSecret(
  ctx: Pick<DomainContext, 'db' | 'secrets'>,
  projectId: string,
  id: string,
) {
  const current = await findEndpoint(ctx, projectId, id);
  const secret = newWebhookSecret();
  const row = await ctx.db
    .updateTable('webhook_endpoints')
    .set({
      secret_enc: ctx.secrets.encrypt(secret),
      previous_secret_enc: current.secret_enc,
      previous_expires_at: new Date(Date.now() + ROTATION_OVERLAP_MS),
      updated_at: new Date(),
    })
    .where('id', '=', current.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return present(row, secret);
}

/** An endpoint with its current signing secret (Resend's API shows it on every read). */
export async function getEndpointWithSecret(
  ctx: Pick<DomainContext, 'db' | 'secrets'>,
  projectId: string,
  id: string,
) {
  const row = await findEndpoint(ctx, projectId, id);
  return present(row, ctx.secrets.decrypt(row.secret_enc).toString('utf8'));
}

/** The secrets that sign now: the current one, and the previous one during its overlap. */
export function signingSecrets(
  ctx: Pick<DomainContext, 'secrets'>,
  row: EndpointRow,
  now = new Date(),
): string[] {
  const secrets = [ctx.secrets.decrypt(row.secret_enc).toString('utf8')];
  if (row.previous_secret_enc && row.previous_expires_at && row.previous_expires_at > now)
    secrets.push(ctx.secrets.decrypt(row.previous_secret_enc).toString('utf8'));
  return secrets;
}

/**
 * Sends one signed delivery now and records the attempt: the same `webhook-id` for every attempt
 * of one delivery, 2xx is success.
 */
export async function attemptDelivery(
  ctx: DomainContext,
  endpoint: EndpointRow,
  delivery: { id: string; messageId: string; attempt: number; payload: Record<string, unknown> },
  /** What else the outcome changes (retry, endpoint state): committed WITH the attempt's row. */
  then?: (tx: Tx, row: Selectable<WebhookDeliveriesTable>) => Promise<void>,
) {
  const body = JSON.stringify(delivery.payload);
  const signed = webhookHeaders(signingSecrets(ctx, endpoint), delivery.messageId, body);
  // an endpoint made through the Resend door reads Svix's header names too (resend-dialect.ts)
  const headers = endpoint.dialect === 'resend' ? withSvixHeaders(signed) : signed;
  const policy = webhookPolicy(ctx);
  const result = await postWebhook(new URL(endpoint.url), policy, headers, body, endpointNaming(policy));
  const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
  // one transaction: a crash cannot leave an attempt logged as failed with no retry scheduled
  return ctx.db.transaction().execute(async (tx) => {
    const row = await tx
      .updateTable('webhook_deliveries')
      .set({
        attempt: delivery.attempt,
        status: ok ? 'succeeded' : 'failed',
        status_code: result.statusCode,
        latency_ms: result.latencyMs,
        response_excerpt: result.excerpt,
        error: result.error,
        updated_at: new Date(),
      })
      .where('id', '=', delivery.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    if (then) await then(tx, row);
    return row;
  });
}

export function presentDelivery(row: Selectable<WebhookDeliveriesTable>) {
  return {
    id: row.id,
    object: 'webhook_delivery' as const,
    webhook_id: row.endpoint_id,
    message_id: row.message_id,
    event_type: row.event_type,
    // the request's body, as POSTed (signed with the headers of each attempt)
    payload: row.payload,
    attempt: row.attempt,
    status: row.status,
    status_code: row.status_code,
    latency_ms: row.latency_ms,
    response_excerpt: row.response_excerpt,
    error: row.error,
    next_retry_at: row.next_retry_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
  };
}

/** GET /webhooks/{id}/deliveries: newest first, paginated. */
export async function listDeliveries(
  ctx: DomainContext,
  projectId: string,
  id: string,
  page: { limit: number; offset: number },
) {
  const endpoint = await findEndpoint(ctx, projectId, id);
  const { rows, ...found } = await readPage(
    ctx.db.selectFrom('webhook_deliveries').where('endpoint_id', '=', endpoint.id),
    (base) => base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc'),
    page,
  );
  return { data: rows.map(presentDelivery), ...found };
}
