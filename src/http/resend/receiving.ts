import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import { Type } from 'typebox';
import type { InboundAttachmentMeta } from '../../db/schema.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { NotFoundError, ValidationError } from '../../domain/core/errors.ts';
import { isUuid } from '../../domain/core/ids.ts';
import { inboundAttachment, inboundRaw, readInbound } from '../../domain/inbound/messages.ts';
import { requireInboundPlan } from '../../domain/inbound/recipients.ts';
import { projectFacts } from '../../domain/plans/project-facts.ts';
import { asSent } from '../../domain/webhooks/resend-dialect.ts';
import { projectFactsOf } from '../auth.ts';
import { typed } from '../schemas.ts';
import { CursorQuery, listOf } from './schemas.ts';
import { derivedId } from './vocabulary.ts';

/**
 * Received emails and their attachments (issue 51) over Posthorn's inbound mail
 * (domain/inbound/messages.ts), routed before `/emails/:id`. Resend hands out download links that
 * need no key (the SDK's `receiving.forward` fetches the raw message by one): here they are signed
 * with the server's secret, name the project, the message and the part, and expire after an hour.
 */

const project = { auth: 'project' as const };
const LINK_TTL_MS = 3600_000;

type Summary = Awaited<ReturnType<typeof readInbound>>;

const attachmentId = (inboundId: string, position: number) => derivedId(inboundId, String(position));

function attachmentMeta(inboundId: string, a: InboundAttachmentMeta) {
  return {
    id: attachmentId(inboundId, a.position),
    filename: a.filename,
    size: a.size,
    content_type: a.content_type,
    content_disposition: a.disposition === 'inline' ? 'inline' : 'attachment',
    ...(a.content_id ? { content_id: a.content_id } : {}),
  };
}

/** A received message in Resend's fields (as listed: without bodies, headers and raw link). */
function listed(m: Omit<Summary, 'headers' | 'text' | 'html'>) {
  return {
    id: m.id,
    to: m.to,
    from: (asSent(m.from) as string | null) ?? m.from_address ?? '',
    created_at: m.created_at,
    subject: m.subject ?? '',
    bcc: null,
    cc: m.cc,
    reply_to: m.reply_to,
    received_for: m.envelope.rcpt_to,
    message_id: m.message_id ?? '',
    attachments: m.attachments.map((a) => attachmentMeta(m.id, a)),
  };
}

/** A link to one part of a message (`raw` or an attachment's position) that needs no key. */
function downloadLink(
  ctx: DomainContext,
  request: FastifyRequest,
  projectId: string,
  id: string,
  part: string,
) {
  const expires = Date.now() + LINK_TTL_MS;
  const signature = sign(ctx, projectId, id, part, expires);
  const query = new URLSearchParams({ project: projectId, expires: String(expires), signature });
  return {
    download_url: `${request.protocol}://${request.host}/resend/emails/receiving/${id}/files/${part}?${query}`,
    expires_at: new Date(expires).toISOString(),
  };
}

const sign = (ctx: DomainContext, projectId: string, id: string, part: string, expires: number) =>
  ctx.secrets.hash(`resend-download:${projectId}:${id}:${part}:${expires}`).toString('base64url');

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
      const messages = await Promise.all(ids.map((id) => readInbound(ctx, facts, id)));
      return listOf(messages.map(listed), found.has_more);
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
        raw: downloadLink(ctx, request, facts.id, m.id, 'raw'),
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
          ...downloadLink(ctx, request, facts.id, m.id, String(a.position)),
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
        ...downloadLink(ctx, request, facts.id, m.id, String(a.position)),
      };
    },
  );
  resendDownloads(app, ctx);
}

/** The links of downloadLink: a signed, unexpired link gives the part's bytes; any other is 404. */
function resendDownloads(app: ReturnType<typeof typed>, ctx: DomainContext) {
  app.get(
    '/emails/receiving/:id/files/:part',
    {
      config: { auth: 'none' },
      schema: {
        hide: true,
        params: Type.Object({ id: Type.String(), part: Type.String() }),
        querystring: Type.Object(
          { project: Type.String(), expires: Type.String(), signature: Type.String() },
          { additionalProperties: true },
        ),
      },
    },
    async (request, reply) => {
      const { id, part } = request.params;
      const { project: projectId, expires, signature } = request.query;
      const at = Number(expires);
      const valid =
        isUuid(projectId) &&
        isUuid(id) &&
        (part === 'raw' || /^\d{1,4}$/.test(part)) &&
        Number.isSafeInteger(at) &&
        at > Date.now() &&
        sign(ctx, projectId, id, part, at) === signature;
      if (!valid) throw new NotFoundError('Download');
      const reader = await projectFacts(ctx, projectId);
      if (part === 'raw') return reply.type('message/rfc822').send(await inboundRaw(ctx, reader, id));
      const { meta, content } = await inboundAttachment(ctx, reader, id, Number(part));
      const type = /^[\w.+-]+\/[\w.+-]+$/.test(meta.content_type)
        ? meta.content_type
        : 'application/octet-stream';
      return reply.type(type).send(content);
    },
  );
}
