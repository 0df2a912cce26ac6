import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import { ValidationError } from '../../domain/core/errors.ts';
import { acceptEmails, type Sender } from '../../domain/emails/accept.ts';
import { type Idempotency, requestHash } from '../../domain/emails/idempotency.ts';
import { rawEmailSource } from '../../domain/emails/raw.ts';
import {
  cancelEmail,
  EMAIL_STATUSES,
  EXACT_STATUS_COUNT_UP_TO,
  getEmail,
  listEmails,
} from '../../domain/emails/read.ts';
import {
  emailStats,
  MAX_STATS_DAYS,
  MIN_MESSAGES_TO_JUDGE,
  RATE_THRESHOLDS,
} from '../../domain/emails/stats.ts';
import { targetPolicy } from '../../domain/webhooks/endpoints.ts';
import { SIMULATOR_DOMAIN } from '../../mail/simulator.ts';
import { authOf, projectFactsOf, projectOf } from '../auth.ts';
import { errors, IdParams, Nullable, PageQuery, page, pageOf, typed } from '../schemas.ts';

import {
  Accepted,
  DayCounts,
  EmailEvent,
  EmailInputSchema,
  EmailSchema,
  RateSchema,
} from './email-schemas.ts';

const pct = (n: number) => `${+(n * 100).toFixed(2)}%`;
const { bounce_rate: bounce, complaint_rate: complaint } = RATE_THRESHOLDS;

const MAX_BODY = 45 * 1024 * 1024;

/**
 * The request's `Idempotency-Key`, if it has one, with what identifies the request: its route, its
 * body and the `mode` that changes its meaning (a permissive batch is not the strict one).
 */
export function idempotencyOf(request: FastifyRequest, mode?: string): Idempotency | undefined {
  const header = request.headers['idempotency-key'];
  if (header === undefined) return undefined;
  const key = Array.isArray(header) ? header[0] : header;
  if (key.length < 1 || key.length > 256)
    throw new ValidationError('Header `Idempotency-Key` must be 1 to 256 characters');
  const route = `${request.method} ${request.routeOptions.url}${mode ? ` (${mode})` : ''}`;
  return { key, requestHash: requestHash(route, request.body) };
}

export async function senderOf(request: FastifyRequest, ctx: DomainContext): Promise<Sender> {
  return {
    facts: await projectFactsOf(request, ctx),
    apiKeyId: authOf(request).key?.id ?? null,
    stream: 'transactional',
  };
}

/** Transactional email: send (one or a batch), read, list, cancel. */
export async function emailRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const project = { auth: 'project' as const };

  app.post(
    '/emails',
    {
      config: project,
      bodyLimit: MAX_BODY,
      schema: {
        tags: ['emails'],
        summary: 'Send an email',
        operationId: 'sendEmail',
        description: `Answered after the message and its delivery job are committed. Unknown fields are ignored and named in \`warnings\`. Send an \`Idempotency-Key\` header to make retries safe (24 h). Test addresses at ${SIMULATOR_DOMAIN} (delivered@, bounced@, complained@, deferred@) never leave the machine.`,
        body: EmailInputSchema,
        response: { 200: Accepted, ...errors(400, 401, 402, 404, 409, 413, 429) },
      },
    },
    async (request) => {
      const result = await acceptEmails(ctx, await senderOf(request, ctx), [request.body], {
        batch: false,
        idempotency: idempotencyOf(request),
        fetchFrom: targetPolicy(ctx),
      });
      return result.response;
    },
  );

  app.post(
    '/emails/batch',
    {
      config: project,
      bodyLimit: MAX_BODY,
      schema: {
        tags: ['emails'],
        summary: 'Send up to 100 emails in one call',
        operationId: 'sendEmailBatch',
        description:
          'All or nothing: when any message is invalid the whole batch is refused, the error naming the first bad message by its index, and nothing is stored. Suppressed recipients are not errors.',
        body: Type.Array(EmailInputSchema, { minItems: 1, maxItems: 100 }),
        response: {
          200: Type.Object({ data: Type.Array(Accepted) }),
          ...errors(400, 401, 402, 404, 409, 413, 429),
        },
      },
    },
    async (request) => {
      const result = await acceptEmails(ctx, await senderOf(request, ctx), request.body, {
        batch: true,
        idempotency: idempotencyOf(request),
        fetchFrom: targetPolicy(ctx),
      });
      return result.response;
    },
  );

  const EmailPage = Type.Object(
    {
      ...page(EmailSchema).properties,
      total_estimated: Type.Boolean({
        description: `true when \`total\` is an estimate: a \`status\` filter over more than ${EXACT_STATUS_COUNT_UP_TO.toLocaleString('en')} messages`,
      }),
    },
    { title: 'EmailList' },
  );
  app.get(
    '/emails',
    {
      config: project,
      schema: {
        tags: ['emails'],
        summary: 'List emails, newest first',
        operationId: 'listEmails',
        querystring: Type.Object({
          ...PageQuery.properties,
          status: Type.Optional(
            Type.String({ description: `one of ${EMAIL_STATUSES.map((s) => `\`${s}\``).join(', ')}` }),
          ),
          to: Type.Optional(Type.String({ description: 'a recipient address' })),
          tag: Type.Optional(Type.String({ description: '`name` or `name:value`' })),
          created_after: Type.Optional(Type.String({ description: 'ISO 8601' })),
          created_before: Type.Optional(Type.String({ description: 'ISO 8601' })),
        }),
        response: { 200: EmailPage, ...errors(400, 401) },
      },
    },
    async (request) => listEmails(ctx, projectOf(request), pageOf(request.query)),
  );

  app.get(
    '/emails/stats',
    {
      config: project,
      schema: {
        tags: ['emails'],
        summary: 'Sent, delivered, bounced and complained per day, with bounce and complaint rates',
        operationId: 'getEmailStats',
        description: `One entry per UTC day of the last \`days\` (today included, days without mail as zeros), counted per recipient from the delivery events, and over the period: the bounce rate (bounced of sent) and the complaint rate (complaints of the mail that reached a mailbox: sent less bounced), each with its level against the thresholds mailbox providers act on. Complaints: Gmail asks senders to stay below ${pct(complaint.warning_at)} and never reach ${pct(complaint.critical_at)} (Yahoo: below 0.3%). Bounces (Gmail and Yahoo publish no number): warning from ${pct(bounce.warning_at)}, critical from ${pct(bounce.critical_at)}, where Amazon SES reviews an account. A rate over fewer than ${MIN_MESSAGES_TO_JUDGE} messages is not judged (level \`too_few\`, its value still given): one bounce or complaint is then 1% of the mail or more, which says more about chance than about the list.`,
        querystring: Type.Object({
          days: Type.Optional(
            Type.Integer({ minimum: 1, maximum: MAX_STATS_DAYS, default: 30, description: '1 to 90' }),
          ),
        }),
        response: {
          200: Type.Object(
            {
              object: Type.Literal('email_stats'),
              days: Type.Integer(),
              from: Type.String({ description: 'the first day (UTC), YYYY-MM-DD' }),
              to: Type.String({ description: 'the last day (UTC, today), YYYY-MM-DD' }),
              data: Type.Array(Type.Object({ date: Type.String(), ...DayCounts })),
              totals: Type.Object(DayCounts),
              bounce_rate: RateSchema,
              complaint_rate: RateSchema,
            },
            { title: 'EmailStats' },
          ),
          ...errors(400, 401),
        },
      },
    },
    async (request) => emailStats(ctx, projectOf(request), request.query.days ?? 30),
  );

  app.get(
    '/emails/:id/raw',
    {
      config: project,
      schema: {
        tags: ['emails'],
        summary: "The email's MIME source, as delivery composes it (without the DKIM signature)",
        operationId: 'getEmailRawSource',
        description:
          'As text/plain: the message composed now from what is stored, a template email rendered again and marketing mail with its footer and List-Unsubscribe headers, exactly as delivery does. The DKIM-Signature is added only as the message leaves; the Date header is the time of the request. 409, with the reason, when it cannot be composed: its body was removed by retention, or delivery could not compose it either.',
        params: IdParams,
        response: {
          200: {
            description: 'the message source (RFC 5322)',
            content: { 'text/plain': { schema: Type.String() } },
          },
          ...errors(401, 404, 409),
        },
      },
    },
    async (request, reply) =>
      reply
        .type('text/plain; charset=utf-8')
        .header('cache-control', 'no-store')
        .send(await rawEmailSource(ctx, projectOf(request), request.params.id)),
  );

  app.get(
    '/emails/:id',
    {
      config: project,
      schema: {
        tags: ['emails'],
        summary: 'What became of one email: the message and its event timeline',
        operationId: 'getEmail',
        params: IdParams,
        response: {
          200: Type.Object(
            {
              ...EmailSchema.properties,
              html: Nullable(Type.String()),
              text: Nullable(Type.String()),
              body_pruned_at: Nullable(
                Type.String({
                  description:
                    'when retention removed the html, text and attachment bytes (POSTHORN_RETENTION_MESSAGE_BODIES_DAYS); null while they are kept',
                }),
              ),
              events: Type.Array(EmailEvent),
            },
            { title: 'EmailWithEvents' },
          ),
          ...errors(401, 404),
        },
      },
    },
    async (request) => getEmail(ctx, projectOf(request), request.params.id),
  );

  app.post(
    '/emails/:id/cancel',
    {
      config: project,
      schema: {
        tags: ['emails'],
        summary: 'Cancel a scheduled email',
        operationId: 'cancelEmail',
        params: IdParams,
        response: { 200: EmailSchema, ...errors(401, 404, 409) },
      },
    },
    async (request) => cancelEmail(ctx, projectOf(request), request.params.id),
  );
}
