import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { Type } from 'typebox';
import type { InboundAttachmentMeta } from '../../db/schema.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { NotFoundError, ValidationError } from '../../domain/core/errors.ts';
import { isUuid } from '../../domain/core/ids.ts';
import { inboundSummaries, readInbound } from '../../domain/inbound/messages.ts';
import { requireInboundPlan } from '../../domain/inbound/recipients.ts';
import { asSent } from '../../domain/webhooks/resend-dialect.ts';
import { projectFactsOf } from '../auth.ts';
import { typed } from '../schemas.ts';
import { downloadLink } from './downloads.ts';
import { CursorQuery, listOf } from './schemas.ts';
import { derivedId, inResendFields } from './vocabulary.ts';

/**
 * Received emails and their attachments (issue 51) over Posthorn's inbound mail
 * (domain/inbound/messages.ts), routed before `/emails/:id`; the source and each attachment by a
 * link that needs no key, as Resend's (downloads.ts).
 */

const project = { auth: 'project' as const };

const attachmentId = (inboundId: string, position: number) => derivedId(inboundId, String(position));

function attachmentMeta(inboundId: string, a: InboundAttachmentMeta) {
  return {
    id: attachmentId(inboundId, a.position),
    filename: a.filename,
    size: a.size,
    content_type: a.content_type,
    ...inResendFields('received_email', {
      disposition: a.disposition === 'inline' ? 'inline' : 'attachment',
    }),
    ...(a.content_id ? { content_id: a.content_id } : {}),
  };
}

/** A received message in Resend's fields (as listed: without bodies, headers and raw link). */
function listed(m: Awaited<ReturnType<typeof inboundSummaries>>[number]) {
  return {
    id: m.id,
    to: m.to,
    ...inResendFields('received_email', {
      from_header: (asSent(m.from) as string | null) ?? m.from_address ?? '',
    }),
    created_at: m.created_at,
    subject: m.subject ?? '',
    bcc: null,
    cc: m.cc,
    reply_to: m.reply_to,
    ...inResendFields('received_email', { rcpt_to: m.envelope.rcpt_to }),
    message_id: m.message_id ?? '',
    attachments: m.attachments.map((a) => attachmentMeta(m.id, a)),
  };
}

async function page(
  ctx: DomainContext,
  projectId: string,
  q: { limit?: number; after?: string; before?: string },
) {
  if (q.after !== undefined && q.before !== undefined)
    throw new ValidationError('Give `after` or `before`, not both');
  const anchorId = q.after ?? q.before;
  if (anchorId !== undefined) {
    const known =
      isUuid(anchorId) &&
      (await ctx.db
        .selectFrom('inbound_messages')
        .select('id')
        .where('id', '=', anchorId)
        .where('project_id', '=', projectId)
        .executeTakeFirst());
    if (!known)
      throw new ValidationError(`\`${q.after ? 'after' : 'before'}\` must be the id of an item of this list`);
  }
  const newer = q.before !== undefined;
  const limit = q.limit ?? 20;
  const at = sql`(select created_at, id from inbound_messages where id = ${anchorId ?? null})`;
  const { rows } = await sql<{ id: string }>`
    select id from inbound_messages where project_id = ${projectId}
       ${anchorId ? (newer ? sql`and (created_at, id) > ${at}` : sql`and (created_at, id) < ${at}`) : sql``}
     order by ${newer ? sql`created_at asc, id asc` : sql`created_at desc, id desc`} limit ${limit + 1}`.execute(
    ctx.db,
  );
  return { ids: rows.slice(0, limit).map((r) => r.id), has_more: rows.length > limit, newer };
}

export async function resendReceivingRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const Id = Type.Object({ id: Type.String() });
  app.get(
    '/emails/receiving',
    { config: project, schema: { hide: true, querystring: CursorQuery } },
    async (request) => {
      const facts = await projectFactsOf(request, ctx);
      requireInboundPlan(facts.plan);
      const found = await page(ctx, facts.id, request.query);
      const ids = found.newer ? found.ids.reverse() : found.ids;
      return listOf((await inboundSummaries(ctx, facts, ids)).map(listed), found.has_more);
    },
  );
  app.get(
    '/emails/receiving/:id',
    { config: project, schema: { hide: true, params: Id } },
    async (request) => {
      const facts = await projectFactsOf(request, ctx);
      const m = await readInbound(ctx, facts, request.params.id);
      return {
        object: 'email',
        ...listed(m),
        html: m.html,
        text: m.text,
        headers: Object.fromEntries(m.headers.map((h) => [h.name.toLowerCase(), h.value])),
        raw: downloadLink(ctx, request, facts.id, 'received', m.id, 'raw'),
      };
    },
  );
  app.get(
    '/emails/receiving/:id/attachments',
    { config: project, schema: { hide: true, params: Id, querystring: CursorQuery } },
    async (request) => {
      const facts = await projectFactsOf(request, ctx);
      const m = await readInbound(ctx, facts, request.params.id);
      return listOf(
        m.attachments.map((a) => ({
          ...attachmentMeta(m.id, a),
          ...downloadLink(ctx, request, facts.id, 'received', m.id, String(a.position)),
        })),
      );
    },
  );
  app.get(
    '/emails/receiving/:id/attachments/:attachment_id',
    {
      config: project,
      schema: { hide: true, params: Type.Object({ id: Type.String(), attachment_id: Type.String() }) },
    },
    async (request) => {
      const facts = await projectFactsOf(request, ctx);
      const m = await readInbound(ctx, facts, request.params.id);
      const a = m.attachments.find((x) => attachmentId(m.id, x.position) === request.params.attachment_id);
      if (!a) throw new NotFoundError('Attachment');
      return {
        object: 'attachment',
        ...attachmentMeta(m.id, a),
        ...downloadLink(ctx, request, facts.id, 'received', m.id, String(a.position)),
      };
    },
  );
}
