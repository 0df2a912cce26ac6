import type { FastifyInstance } from 'fastify';
import type { DomainContext } from '../../domain/core/context.ts';
import { ValidationError } from '../../domain/core/errors.ts';
import { ConfirmationFailedError, createSesFeedback } from '../../domain/feedback/ses-feedback.ts';
import { badStringIn } from '../request-checks.ts';

/** SNS's HTTP deliveries are at most 256 KB of message in a JSON envelope. */
const BODY_LIMIT = 1024 * 1024;

/**
 * Providers' feedback on POSTHORN_PUBLIC_URL, without a key: `POST /feedback/ses` takes the SNS
 * messages of Amazon SES's events, authenticated by SNS's signature (a forged or altered one is a
 * 403 and records nothing). Kept out of the OpenAPI document: Amazon reaches it, not API clients
 * (README "Routes" documents it). SNS posts JSON as `text/plain`, so both are read.
 */
export async function feedbackRoutes(app: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const receiveSesFeedback = createSesFeedback(ctx);
  app.addContentTypeParser(
    'text/plain',
    { parseAs: 'string', bodyLimit: BODY_LIMIT },
    (_request, body, done) => done(null, body),
  );

  app.post(
    '/feedback/ses',
    { config: { auth: 'none' }, bodyLimit: BODY_LIMIT, schema: { hide: true } },
    async (request, reply) => {
      let body: unknown = request.body;
      if (typeof body === 'string') {
        try {
          body = JSON.parse(body);
        } catch {
          throw new ValidationError('Not an SNS message: the body is not JSON');
        }
      }
      const bad = badStringIn(body);
      if (bad) throw new ValidationError(`Not an SNS message: ${bad.path} ${bad.problem}`);
      try {
        const result = await receiveSesFeedback(body);
        return {
          object: 'provider_feedback',
          provider: 'ses',
          kind: result.kind,
          outcome: result.outcome,
          duplicate: result.duplicate,
        };
      } catch (err) {
        if (err instanceof ConfirmationFailedError) return reply.code(502).send({ error: err.message });
        throw err;
      }
    },
  );
}
