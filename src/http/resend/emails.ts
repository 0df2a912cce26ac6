import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import { type Static, Type } from 'typebox';
import type { EmailsTable } from '../../db/schema.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { parseIsoDate } from '../../domain/core/dates.ts';
import { ValidationError } from '../../domain/core/errors.ts';
import { keysetPage } from '../../domain/core/keyset.ts';
import { acceptEmails, type Refusal } from '../../domain/emails/accept.ts';
import { cancelEmail, getEmail, presentEmail } from '../../domain/emails/read.ts';
import { rescheduleEmail } from '../../domain/emails/reschedule.ts';
import { emailStats, MAX_STATS_DAYS } from '../../domain/emails/stats.ts';
import { targetPolicy } from '../../domain/webhooks/endpoints.ts';
import { projectOf } from '../auth.ts';
import { EmailInputSchema } from '../routes/email-schemas.ts';
import { idempotencyOf, senderOf } from '../routes/emails.ts';
import { typed } from '../schemas.ts';
import { checkFrom, checkIdempotencyKey } from './errors.ts';
import { resendEmail } from './present.ts';
import { CursorQuery, IdParams } from './schemas.ts';
import { resolveTemplateAliases } from './templates.ts';

const MAX_BODY = 45 * 1024 * 1024;
const project = { auth: 'project' as const };

type EmailInput = Static<typeof EmailInputSchema>;

/**
 * Resend's "permissive" batch: each valid message is sent, each invalid one (a file of its own not
 * fetched included) named by its index; a replay answers exactly this.
 */
async function permissiveBatch(
  ctx: DomainContext,
  request: FastifyRequest,
  sender: Awaited<ReturnType<typeof senderOf>>,
  emails: EmailInput[],
) {
  const result = await acceptEmails(ctx, sender, emails, {
    batch: true,
    idempotency: idempotencyOf(request, 'permissive'),
    refused: [],
    fetchFrom: targetPolicy(ctx),
    templateSubjectWins: true,
    answer: (accepted, errors: Refusal[]) => ({ data: accepted.map((a) => ({ id: a.id })), errors }),
  });
  return result.response;
}

/** Emails and batch, as Resend's API has them. */
export async function resendEmailRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  app.post(
    '/emails',
    { config: project, bodyLimit: MAX_BODY, schema: { hide: true, body: EmailInputSchema } },
    async (request) => {
      checkIdempotencyKey(request);
      checkFrom(request.body.from);
      await resolveTemplateAliases(ctx, projectOf(request), [request.body]);
      const result = await acceptEmails(ctx, await senderOf(request, ctx), [request.body], {
        batch: false,
        idempotency: idempotencyOf(request),
        fetchFrom: targetPolicy(ctx),
        templateSubjectWins: true,
      });
      return { id: result.emails[0].id };
    },
  );
  app.post(
    '/emails/batch',
    {
      config: project,
      bodyLimit: MAX_BODY,
      schema: { hide: true, body: Type.Array(EmailInputSchema, { minItems: 1, maxItems: 100 }) },
    },
    async (request) => {
      const mode = request.headers['x-batch-validation'] ?? 'strict';
      if (mode !== 'strict' && mode !== 'permissive')
        throw new ValidationError('Header `x-batch-validation` must be strict or permissive');
      checkIdempotencyKey(request);
      await resolveTemplateAliases(ctx, projectOf(request), request.body);
      const sender = await senderOf(request, ctx);
      if (mode === 'permissive') return permissiveBatch(ctx, request, sender, request.body);
      // strict: one `from` that is no address refuses the batch, as Resend's 422 invalid_from_address
      for (const [i, email] of request.body.entries()) checkFrom(email.from, `Message ${i}: `);
      const result = await acceptEmails(ctx, sender, request.body, {
        batch: true,
        idempotency: idempotencyOf(request),
        fetchFrom: targetPolicy(ctx),
        templateSubjectWins: true,
      });
      return { data: result.emails.map((a) => ({ id: a.id })) };
    },
  );
  resendEmailReads(app, ctx);
}

function resendEmailReads(app: ReturnType<typeof typed>, ctx: DomainContext) {
  app.get(
    '/emails',
    { config: project, schema: { hide: true, querystring: CursorQuery } },
    async (request) => {
      const page = await keysetPage<Selectable<EmailsTable>>(
        ctx.db,
        'emails',
        sql<boolean>`project_id = ${projectOf(request)}`,
        request.query,
      );
      return {
        object: 'list',
        has_more: page.has_more,
        data: page.rows.map((r) => resendEmail(presentEmail(r))),
      };
    },
  );
  app.get(
    '/emails/metrics',
    {
      config: project,
      schema: {
        hide: true,
        querystring: Type.Object(
          { start_date: Type.Optional(Type.String()), end_date: Type.Optional(Type.String()) },
          { additionalProperties: true },
        ),
      },
    },
    async (request) => {
      const start = request.query.start_date
        ? (parseIsoDate(request.query.start_date)?.getTime() ?? Number.NaN)
        : Date.now() - 29 * 86_400_000;
      if (Number.isNaN(start)) throw new ValidationError('`start_date` must be a date such as 2026-11-01');
      const days = Math.min(MAX_STATS_DAYS, Math.max(1, Math.ceil((Date.now() - start) / 86_400_000) + 1));
      const stats = await emailStats(ctx, projectOf(request), days);
      return {
        object: 'metrics',
        start_date: stats.data[0]?.date ?? null,
        end_date: stats.data[stats.data.length - 1]?.date ?? null,
        metrics: ['sent', 'delivered', 'bounced', 'complained'],
        dimensions: ['period'],
        granularity: 'daily',
        totals: stats.totals,
        data: stats.data.map(({ date, ...counts }) => ({ period: date, ...counts })),
      };
    },
  );
  app.get('/emails/:id', { config: project, schema: { hide: true, params: IdParams } }, async (request) =>
    resendEmail(await getEmail(ctx, projectOf(request), request.params.id)),
  );
  app.patch(
    '/emails/:id',
    {
      config: project,
      schema: { hide: true, params: IdParams, body: Type.Object({ scheduled_at: Type.String() }) },
    },
    async (request) => {
      const moved = await rescheduleEmail(
        ctx,
        projectOf(request),
        request.params.id,
        request.body.scheduled_at,
      );
      return { object: 'email', id: moved.id };
    },
  );
  app.post(
    '/emails/:id/cancel',
    { config: project, schema: { hide: true, params: IdParams } },
    async (request) => {
      const cancelled = await cancelEmail(ctx, projectOf(request), request.params.id);
      return { object: 'email', id: cancelled.id };
    },
  );
}
