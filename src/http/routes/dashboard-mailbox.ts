import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { TrustProxy } from '../../config.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { type MailboxCaller, mailboxAvailability, requireMailbox } from '../../domain/mailbox/access.ts';
import { listMailboxMessages, mailboxMessageRaw, readMailboxMessage } from '../../domain/mailbox/messages.ts';
import { foreignHostReason, refuseForeignHost } from '../host-check.ts';
import { isLoopbackAddress } from '../metrics.ts';
import { errors, Nullable, PageQuery, page, pageOf, Timestamp, typed, Uuid } from '../schemas.ts';

const MailboxStatus = Type.Object(
  {
    available: Type.Boolean({ description: 'whether this caller may read the dev mailbox now' }),
    reason: Nullable(
      Type.String({ description: 'why not, and what to do about it; null when it is available' }),
    ),
  },
  { title: 'MailboxStatus' },
);

const Summary = {
  id: Uuid,
  object: Type.Literal('mailbox_message'),
  message_id: Nullable(Type.String({ description: 'the Message-ID header, with its angle brackets' })),
  envelope: Type.Object({
    from: Type.String({ description: 'the return path (MAIL FROM)' }),
    to: Type.Array(Type.String(), { description: 'the recipients the message was captured for (RCPT TO)' }),
  }),
  subject: Nullable(Type.String()),
  size_bytes: Type.Integer({ description: 'the size of the raw message' }),
  created_at: Timestamp,
};
const MailboxMessageSummary = Type.Object(Summary, { title: 'MailboxMessageSummary' });
const MailboxMessagePage = Type.Object(page(MailboxMessageSummary).properties, {
  title: 'MailboxMessagePage',
});
const MailboxMessage = Type.Object(
  {
    ...Summary,
    from: Nullable(Type.String({ description: 'the From header, decoded' })),
    to: Type.Array(Type.String(), { description: 'the addresses of the To header' }),
    cc: Type.Array(Type.String()),
    reply_to: Type.Array(Type.String()),
    date: Nullable(Type.String({ format: 'date-time', description: 'the Date header' })),
    headers: Type.Array(Type.Object({ name: Type.String(), value: Type.String() }), {
      description: 'every header line in order, folded lines joined (values as written)',
    }),
    text: Nullable(Type.String({ description: 'the text part, decoded' })),
    html: Nullable(Type.String({ description: 'the HTML part, decoded' })),
    attachments: Type.Array(
      Type.Object({
        filename: Nullable(Type.String()),
        content_type: Type.String(),
        size: Type.Integer({ description: 'bytes, decoded' }),
      }),
    ),
  },
  { title: 'MailboxMessage' },
);
const MessageParams = Type.Object({ id: Type.String({ description: 'mailbox message id' }) });
// bytes, not JSON: declared per media type so that Fastify sends the Buffer as it is
const Binary = Type.String({ format: 'binary' });

const ACCESS = `Open without signing in, and only while mail is captured (no relay is configured): by default to clients on this machine only (POSTHORN_DEV_MAILBOX=local; a request that came through a proxy counts only through POSTHORN_TRUST_PROXY), to anyone with POSTHORN_DEV_MAILBOX=open, to nobody with off. Otherwise 404, saying why. Only for the Host of POSTHORN_PUBLIC_URL or POSTHORN_APP_URL or a loopback address (localhost, 127.0.0.1, [::1]); any other Host (a page that rebound its name to this machine) is a 403.`;

/**
 * Whether the request comes from this machine: a loopback client address, and no forwarding headers
 * unless POSTHORN_TRUST_PROXY says whose X-Forwarded-For to believe (a reverse proxy on this host
 * would otherwise make every visitor look local).
 */
export function callerOf(request: FastifyRequest, trustProxy: TrustProxy): MailboxCaller {
  const headers = request.headers;
  const forwarded = ['forwarded', 'x-forwarded-for', 'x-real-ip'].some((h) => h in headers);
  const throughTrustedProxy = trustProxy !== false && 'x-forwarded-for' in headers;
  return {
    local: isLoopbackAddress(request.ip) && (!forwarded || throughTrustedProxy),
    localPort: request.socket.localPort,
  };
}

/**
 * The dev mailbox under {app_url}/api: mail captured when no relay is configured, listed and read
 * decoded, for the dashboard's Mailbox screen. Never behind a session: a person signing up reads
 * the emailed code there first.
 */
export async function dashboardMailboxRoutes(
  instance: FastifyInstance,
  { ctx, devMailbox }: { ctx: DomainContext; devMailbox: boolean },
) {
  const app = typed(instance);
  const config = { auth: 'none' as const };
  const tags = ['dashboard'];
  // before the request is read any further: a caller who may not read the mailbox learns only why;
  // a Host that is not this server's is a page that rebound its name to this machine (issue 47)
  const guard = async (request: FastifyRequest) => {
    refuseForeignHost(request, ctx.config, 'The dev mailbox');
    requireMailbox(ctx.config, devMailbox, callerOf(request, ctx.config.trustProxy));
  };

  app.get(
    '/mailbox/status',
    {
      config,
      schema: {
        tags,
        summary: 'Whether this caller may read the dev mailbox, and if not, why',
        operationId: 'getMailboxStatus',
        description: ACCESS,
        response: { 200: MailboxStatus },
      },
    },
    async (request) => {
      const foreign = foreignHostReason(request, ctx.config, 'The dev mailbox');
      if (foreign) return { available: false, reason: foreign };
      return mailboxAvailability(ctx.config, devMailbox, callerOf(request, ctx.config.trustProxy));
    },
  );

  app.get(
    '/mailbox',
    {
      config,
      onRequest: guard,
      schema: {
        tags,
        summary: 'The dev mailbox: mail captured instead of sent, newest first',
        operationId: 'listMailboxMessages',
        description: ACCESS,
        querystring: Type.Object({
          ...PageQuery.properties,
          to: Type.Optional(
            Type.String({
              maxLength: 254,
              description: 'keep messages with a recipient address containing this (any case)',
            }),
          ),
        }),
        response: { 200: MailboxMessagePage, ...errors(400, 404) },
      },
    },
    async (request) => listMailboxMessages(ctx.db, pageOf(request.query)),
  );

  app.get(
    '/mailbox/:id',
    {
      config,
      onRequest: guard,
      schema: {
        tags,
        summary:
          'One captured message, decoded: addresses, subject, date, headers, text and HTML parts, attachments',
        operationId: 'getMailboxMessage',
        description: ACCESS,
        params: MessageParams,
        response: { 200: MailboxMessage, ...errors(404) },
      },
    },
    async (request) => readMailboxMessage(ctx.db, request.params.id),
  );

  app.get(
    '/mailbox/:id/raw',
    {
      config,
      onRequest: guard,
      schema: {
        tags,
        summary: 'One captured message exactly as it would have left (message/rfc822)',
        operationId: 'getMailboxMessageRaw',
        description: ACCESS,
        params: MessageParams,
        response: {
          200: {
            description: 'the raw message, byte for byte',
            content: { 'message/rfc822': { schema: Binary } },
          },
          ...errors(404),
        },
      },
    },
    async (request, reply) => {
      const raw = await mailboxMessageRaw(ctx.db, request.params.id);
      return reply.type('message/rfc822').send(raw);
    },
  );
}
