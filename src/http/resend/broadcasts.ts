import type { FastifyInstance } from 'fastify';
import { type Selectable, sql } from 'kysely';
import { type Static, Type } from 'typebox';
import type { CampaignsTable } from '../../db/schema.ts';
import { cancelCampaign, scheduleCampaign } from '../../domain/campaigns/actions.ts';
import { campaignActivity } from '../../domain/campaigns/activity.ts';
import {
  createCampaign,
  deleteCampaign,
  duplicateCampaign,
  getCampaign,
  presentCampaign,
  updateCampaign,
} from '../../domain/campaigns/campaigns.ts';
import type { CampaignInput } from '../../domain/campaigns/fields.ts';
import { sendCampaign } from '../../domain/campaigns/send.ts';
import { parseMailbox } from '../../domain/core/addresses.ts';
import { now } from '../../domain/core/clock.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { ValidationError } from '../../domain/core/errors.ts';
import { keysetPage } from '../../domain/core/keyset.ts';
import { parseNaturalTime } from '../../domain/core/natural-time.ts';
import type { ProjectFacts } from '../../domain/plans/project-facts.ts';
import { projectFactsOf, projectOf } from '../auth.ts';
import { typed } from '../schemas.ts';
import { liquidOfMergeTags } from './merge-tags.ts';
import { compact } from './present.ts';
import { CursorQuery, IdParams, listOf } from './schemas.ts';

/** Resend's broadcasts as Posthorn's campaigns: a segment (audience) is a list. */

const project = { auth: 'project' as const };

const STATUS: Record<string, string> = { sending: 'queued', cancelled: 'canceled' };

const BroadcastBody = {
  name: Type.Optional(Type.String()),
  segment_id: Type.Optional(Type.String()),
  audience_id: Type.Optional(Type.String()),
  from: Type.Optional(Type.String()),
  subject: Type.Optional(Type.String()),
  reply_to: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
  preview_text: Type.Optional(Type.String()),
  html: Type.Optional(Type.String()),
  text: Type.Optional(Type.String()),
  topic_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
};
const BroadcastObject = Type.Object(BroadcastBody, { additionalProperties: true });
type Body = Static<typeof BroadcastObject>;

const escapeHtml = (s: string) =>
  s.replace(/[&<>"]/g, (c) => `&${{ '&': 'amp', '<': 'lt', '>': 'gt', '"': 'quot' }[c]};`);

/** A broadcast's fields as a campaign's. */
function campaignInput(b: Body): CampaignInput {
  const from = b.from === undefined ? undefined : parseMailbox(b.from, 'from');
  const replyTo = Array.isArray(b.reply_to)
    ? b.reply_to
    : b.reply_to === undefined
      ? undefined
      : [b.reply_to];
  if (replyTo && replyTo.length > 1) throw new ValidationError('`reply_to` takes one address in a broadcast');
  const list = b.segment_id ?? b.audience_id;
  // Resend's merge tags ({{{FIRST_NAME|there}}}, {{{RESEND_UNSUBSCRIBE_URL}}}) as Liquid
  const html = liquidOfMergeTags(
    b.html ??
      (b.text === undefined ? undefined : `<div style="white-space: pre-wrap">${escapeHtml(b.text)}</div>`),
  );
  return {
    ...(b.name !== undefined ? { name: b.name } : {}),
    ...(from ? { from: from.address, from_name: from.name || null } : {}),
    ...(replyTo ? { reply_to: replyTo[0] ?? null } : {}),
    ...(b.subject !== undefined ? { subject: liquidOfMergeTags(b.subject) } : {}),
    ...(b.preview_text !== undefined ? { preheader: liquidOfMergeTags(b.preview_text) } : {}),
    ...(html !== undefined ? { html } : {}),
    ...(list !== undefined ? { list_ids: [list] } : {}),
    // a topic's broadcast goes to its subscribers, and its unsubscribe link leaves that topic
    ...(b.topic_id !== undefined ? { topic_id: b.topic_id } : {}),
  };
}

/** Send now, or schedule (ISO 8601 or "in 1 hour"). */
async function sendOrSchedule(
  ctx: DomainContext,
  facts: ProjectFacts,
  id: string,
  scheduledAt: string | undefined,
) {
  if (scheduledAt === undefined) return sendCampaign(ctx, facts, id);
  const at = parseNaturalTime(scheduledAt, now())?.toISOString() ?? scheduledAt;
  return scheduleCampaign(ctx, facts, id, at);
}

type Campaign = ReturnType<typeof presentCampaign>;

const summary = (c: Campaign) =>
  compact({
    id: c.id,
    name: c.name,
    audience_id: c.list_ids[0] ?? null,
    segment_id: c.list_ids[0] ?? null,
    status: STATUS[c.status] ?? c.status,
    created_at: c.created_at,
    scheduled_at: c.scheduled_at,
    sent_at: c.started_at,
  });

const broadcast = (c: Campaign) => ({
  ...compact({
    object: 'broadcast',
    ...summary(c),
    from: c.from && (c.from_name ? `${c.from_name} <${c.from}>` : c.from),
    subject: c.subject,
    reply_to: c.reply_to ? [c.reply_to] : null,
    preview_text: c.preheader,
  }),
  // nullable in Resend's description
  audience_id: c.list_ids[0] ?? null,
  segment_id: c.list_ids[0] ?? null,
  html: c.html,
  text: null,
  topic_id: c.topic_id,
});

const RECIPIENT_EVENTS: Record<string, string> = {
  sent: 'sent',
  delivered: 'delivered',
  delivery_delayed: 'deferred',
  opened: 'opened',
  clicked: 'clicked',
  bounced: 'bounced',
  complained: 'complained',
  failed: 'failed',
  suppressed: 'suppressed',
};

async function recipients(
  ctx: DomainContext,
  projectId: string,
  id: string,
  q: { type?: string; email?: string; limit?: number },
) {
  await getCampaign(ctx, projectId, id);
  const type = RECIPIENT_EVENTS[q.type ?? ''];
  if (!type) throw new ValidationError(`\`type\` must be one of ${Object.keys(RECIPIENT_EVENTS).join(', ')}`);
  const limit = q.limit ?? 20;
  const { rows } = await sql<{ id: string; contact_id: string; email: string; count: number }>`
    select r.email_id as id, r.contact_id, r.email, count(*)::int as count
      from campaign_recipients r join email_events ev on ev.email_id = r.email_id and ev.type = ${type}
     where r.campaign_id = ${id} ${q.email ? sql`and r.email = ${q.email.toLowerCase()}` : sql``}
     group by 1, 2, 3 order by r.email limit ${limit + 1}`.execute(ctx.db);
  return listOf(rows.slice(0, limit), rows.length > limit);
}

export async function resendBroadcastRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  app.post(
    '/broadcasts',
    {
      config: project,
      schema: {
        hide: true,
        body: Type.Object(
          {
            ...BroadcastBody,
            send: Type.Optional(Type.Boolean()),
            scheduled_at: Type.Optional(Type.String()),
          },
          { additionalProperties: true },
        ),
      },
    },
    async (request, reply) => {
      const facts = await projectFactsOf(request, ctx);
      const input = campaignInput(request.body);
      const created = await createCampaign(ctx, facts, {
        name: request.body.name ?? request.body.subject ?? 'Broadcast',
        ...input,
      });
      if (request.body.send)
        // a broadcast that cannot be sent is not kept: the refusal writes nothing
        await sendOrSchedule(ctx, facts, created.id, request.body.scheduled_at).catch(async (err) => {
          await deleteCampaign(ctx, facts.id, created.id);
          throw err;
        });
      return reply.code(201).send({ id: created.id, object: 'broadcast' });
    },
  );
  app.get(
    '/broadcasts',
    { config: project, schema: { hide: true, querystring: CursorQuery } },
    async (request) => {
      const page = await keysetPage<Selectable<CampaignsTable>>(
        ctx.db,
        'campaigns',
        sql<boolean>`project_id = ${projectOf(request)}`,
        request.query,
      );
      return listOf(
        page.rows.map((r) => summary(presentCampaign(r))),
        page.has_more,
      );
    },
  );
  app.get('/broadcasts/:id', { config: project, schema: { hide: true, params: IdParams } }, async (request) =>
    broadcast(await getCampaign(ctx, projectOf(request), request.params.id)),
  );
  app.patch(
    '/broadcasts/:id',
    {
      config: project,
      schema: {
        hide: true,
        params: IdParams,
        body: BroadcastObject,
      },
    },
    async (request) => {
      const updated = await updateCampaign(
        ctx,
        await projectFactsOf(request, ctx),
        request.params.id,
        campaignInput(request.body),
      );
      return { object: 'broadcast', id: updated.id };
    },
  );
  app.delete(
    '/broadcasts/:id',
    { config: project, schema: { hide: true, params: IdParams } },
    async (request) => {
      await deleteCampaign(ctx, projectOf(request), request.params.id);
      return { object: 'broadcast', id: request.params.id, deleted: true };
    },
  );
  resendBroadcastActions(app, ctx);
}

function resendBroadcastActions(app: ReturnType<typeof typed>, ctx: DomainContext) {
  app.post(
    '/broadcasts/:id/send',
    {
      config: project,
      schema: {
        hide: true,
        params: IdParams,
        body: Type.Optional(
          Type.Object({ scheduled_at: Type.Optional(Type.String()) }, { additionalProperties: true }),
        ),
      },
    },
    async (request) => {
      await sendOrSchedule(
        ctx,
        await projectFactsOf(request, ctx),
        request.params.id,
        request.body?.scheduled_at,
      );
      return { id: request.params.id };
    },
  );
  app.post(
    '/broadcasts/:id/cancel',
    { config: project, schema: { hide: true, params: IdParams } },
    async (request) => {
      await cancelCampaign(ctx, projectOf(request), request.params.id);
      return { object: 'broadcast', id: request.params.id };
    },
  );
  // a copy of the broadcast as a new draft, its content, audience and settings
  app.post(
    '/broadcasts/:id/duplicate',
    { config: project, schema: { hide: true, params: IdParams } },
    async (request) => {
      const copy = await duplicateCampaign(ctx, await projectFactsOf(request, ctx), request.params.id);
      return { object: 'broadcast', id: copy.id };
    },
  );
  app.get(
    '/broadcasts/:id/recipients',
    {
      config: project,
      schema: {
        hide: true,
        params: IdParams,
        querystring: Type.Object({
          ...CursorQuery.properties,
          type: Type.Optional(Type.String()),
          email: Type.Optional(Type.String()),
        }),
      },
    },
    async (request) => recipients(ctx, projectOf(request), request.params.id, request.query),
  );
  app.get(
    '/broadcasts/:id/clicked-links',
    { config: project, schema: { hide: true, params: IdParams, querystring: CursorQuery } },
    async (request) => {
      const activity = await campaignActivity(ctx, projectOf(request), request.params.id);
      return listOf(
        activity.top_links.map((l) => ({
          id: l.url,
          url: l.url,
          clicks: l.clicks_total,
          unique_clicks: l.clicks_unique,
        })),
      );
    },
  );
}
