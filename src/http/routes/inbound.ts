import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import { inboundAttachment, inboundRaw, listInbound, readInbound } from '../../domain/inbound/messages.ts';
import { projectFactsOf } from '../auth.ts';
import { errors, Nullable, PageQuery, page, pageOf, typed } from '../schemas.ts';

const AttachmentMeta = Type.Object(
  {
    position: Type.Integer({ description: 'download at /inbound/{id}/attachments/{position}' }),
    filename: Nullable(Type.String()),
    content_type: Type.String(),
    content_id: Nullable(Type.String()),
    disposition: Nullable(Type.String()),
    size: Type.Integer(),
    checksum: Type.String({ description: 'SHA-256 of the content, hex' }),
  },
  { title: 'InboundAttachment' },
);
const AuthResults = Type.Object(
  {
    spf: Type.String(),
    dkim: Type.Array(
      Type.Object({
        domain: Nullable(Type.String()),
        selector: Nullable(Type.String()),
        result: Type.String(),
      }),
    ),
    dmarc: Type.String(),
    dmarc_policy: Nullable(Type.String()),
    arc: Type.String(),
    authentication_results: Type.String({
      description: 'the Authentication-Results header Posthorn computed',
    }),
  },
  { title: 'InboundAuthResults' },
);
const Summary = {
  id: Type.String(),
  object: Type.Literal('inbound_email'),
  from: Nullable(Type.String()),
  from_address: Nullable(Type.String()),
  to: Type.Array(Type.String()),
  cc: Type.Array(Type.String()),
  reply_to: Type.Array(Type.String()),
  subject: Nullable(Type.String()),
  message_id: Nullable(Type.String()),
  envelope: Type.Object({
    mail_from: Nullable(Type.String()),
    rcpt_to: Type.Array(Type.String()),
    remote_ip: Nullable(Type.String()),
    helo: Nullable(Type.String()),
  }),
  attachments: Type.Array(AttachmentMeta),
  auth: AuthResults,
  spam: Type.Object({ flagged: Type.Boolean(), reasons: Type.Array(Type.String()) }),
  size_bytes: Type.Integer(),
  sent_at: Nullable(Type.String()),
  created_at: Type.String(),
};
const InboundSummary = Type.Object(Summary, { title: 'InboundEmailSummary' });
const InboundEmailPage = Type.Object(page(InboundSummary).properties, { title: 'InboundEmailPage' });
const InboundEmail = Type.Object(
  {
    ...Summary,
    headers: Type.Array(Type.Object({ name: Type.String(), value: Type.String() })),
    text: Nullable(Type.String()),
    html: Nullable(Type.String()),
  },
  { title: 'InboundEmail' },
);
const InboundParams = Type.Object({ id: Type.String({ description: 'inbound email id' }) });
const AttachmentParams = Type.Object({
  ...InboundParams.properties,
  position: Type.Integer({
    minimum: 0,
    maximum: 9999,
    description: "the attachment's `position` in the message's `attachments` (0 for the first)",
  }),
});
// bytes, not JSON: declared per media type so that Fastify sends the Buffer as it is
const Binary = Type.String({ format: 'binary' });

/** Inbound mail: what people send to the project's inbound address (a plan feature). */
export async function inboundRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const config = { auth: 'project' as const };
  const tags = ['inbound'];

  app.get(
    '/inbound',
    {
      config,
      schema: {
        tags,
        summary: 'Received mail, newest first',
        operationId: 'listInboundEmails',
        description:
          'Mail sent to the address in GET /v1/me `inbound` (any local part), or to a verified domain with inbound enabled.',
        querystring: Type.Object({
          ...PageQuery.properties,
          from: Type.Optional(Type.String({ description: 'sender address (exact, any case)' })),
          to: Type.Optional(Type.String({ description: 'envelope recipient address' })),
        }),
        response: { 200: InboundEmailPage, ...errors(400, 401, 402) },
      },
    },
    async (request) => listInbound(ctx, await projectFactsOf(request, ctx), pageOf(request.query)),
  );
  app.get(
    '/inbound/:id',
    {
      config,
      schema: {
        tags,
        summary: 'One received message: headers, addresses, bodies, attachments, authentication results',
        operationId: 'getInboundEmail',
        params: InboundParams,
        response: { 200: InboundEmail, ...errors(401, 402, 404) },
      },
    },
    async (request) => readInbound(ctx, await projectFactsOf(request, ctx), request.params.id),
  );
  app.get(
    '/inbound/:id/raw',
    {
      config,
      schema: {
        tags,
        summary: 'The message exactly as received (message/rfc822)',
        operationId: 'getInboundEmailRaw',
        params: InboundParams,
        response: {
          200: {
            description: 'the raw message, byte for byte',
            content: { 'message/rfc822': { schema: Binary } },
          },
          ...errors(401, 402, 404),
        },
      },
    },
    async (request, reply) => {
      const raw = await inboundRaw(ctx, await projectFactsOf(request, ctx), request.params.id);
      return reply.type('message/rfc822').send(raw);
    },
  );
  app.get(
    '/inbound/:id/attachments/:position',
    {
      config,
      schema: {
        tags,
        summary: "Download one attachment (position from the message's `attachments`)",
        operationId: 'getInboundAttachment',
        params: AttachmentParams,
        response: {
          200: {
            description:
              "the attachment's bytes; its real media type is in the Content-Type header (application/octet-stream when the message gave none usable)",
            headers: {
              'content-disposition': Type.String({
                description: 'attachment; filename="..."; filename*=UTF-8\'\'... (the original file name)',
              }),
            },
            content: { 'application/octet-stream': { schema: Binary } },
          },
          ...errors(400, 401, 402, 404),
        },
      },
    },
    async (request, reply) => {
      const { id, position } = request.params;
      const { meta, content } = await inboundAttachment(
        ctx,
        await projectFactsOf(request, ctx),
        id,
        position,
      );
      const name = meta.filename ?? `attachment-${meta.position}`;
      const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
      const type = /^[\w.+-]+\/[\w.+-]+$/.test(meta.content_type)
        ? meta.content_type
        : 'application/octet-stream';
      return reply
        .type(type)
        .header(
          'content-disposition',
          `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`,
        )
        .send(content);
    },
  );
}
