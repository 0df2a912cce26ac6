import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { isDatabaseUnavailable } from '../db/database.ts';
import {
  AuthenticationError,
  ConflictError,
  DomainError,
  ForbiddenError,
  NotFoundError,
  PlanFeatureError,
  RateLimitError,
  refusalText,
  SendRefusedError,
  ValidationError,
} from '../domain/core/errors.ts';
import { DnsUnavailableError } from '../domain/sending-domains/dns-lookup.ts';
import { describeValidationError } from './validation.ts';

/** HTTP status of each domain error class. */
export function statusOf(err: DomainError): number {
  if (err instanceof ValidationError || err instanceof SendRefusedError) return 400;
  if (err instanceof AuthenticationError) return 401;
  if (err instanceof PlanFeatureError) return 402;
  if (err instanceof ForbiddenError) return 403;
  if (err instanceof NotFoundError) return 404;
  if (err instanceof ConflictError) return 409;
  if (err instanceof RateLimitError) return 429;
  return 400;
}

/** What a 503 for an unreachable database asks the client to wait before trying again. */
const DATABASE_RETRY_AFTER_SECONDS = 5;

export function sendRateLimitHeaders(
  reply: FastifyReply,
  state: { limit: number; remaining: number; resetSeconds: number },
) {
  reply.header('RateLimit-Limit', state.limit);
  reply.header('RateLimit-Remaining', state.remaining);
  reply.header('RateLimit-Reset', state.resetSeconds);
  reply.header('RateLimit-Policy', `${state.limit};w=1`);
}

/**
 * Every error leaves as `{"error": "..."}` (402 adds code, feature, upgrade_to; 429 adds code,
 * `rate_limited` or `daily_limit`); never a stack trace.
 */
export function installErrorHandling(app: FastifyInstance) {
  app.setErrorHandler((error: FastifyError | DomainError, request, reply) => {
    if (error instanceof DomainError) {
      const status = statusOf(error);
      if (error instanceof RateLimitError) {
        reply.header('Retry-After', error.retryAfterSeconds);
        const state = (
          error as RateLimitError & { state?: { limit: number; remaining: number; resetSeconds: number } }
        ).state;
        if (state) sendRateLimitHeaders(reply, state);
      }
      if (error instanceof RateLimitError) {
        // one status, two limits: `code` tells the request rate from the shared domain's daily cap
        return reply.code(status).send({ error: error.message, code: error.code });
      }
      if (error instanceof PlanFeatureError) {
        return reply.code(status).send({
          error: refusalText(error),
          code: error.code,
          feature: error.feature,
          upgrade_to: error.upgradeTo,
        });
      }
      return reply.code(status).send({ error: error.message });
    }
    if (error instanceof DnsUnavailableError) return reply.code(503).send({ error: error.message });
    const err = error as FastifyError;
    if (err.validation) {
      return reply
        .code(400)
        .send({ error: describeValidationError(err.validation as never, err.validationContext) });
    }
    switch (err.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return reply
          .code(413)
          .send({ error: `Request body is too large for ${request.method} ${request.url.split('?')[0]}` });
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return reply.code(415).send({ error: 'Unsupported Content-Type: send the body as application/json' });
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return reply.code(400).send({
          error: 'The request body is empty but Content-Type is application/json: send a JSON object',
        });
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
        return reply.code(400).send({ error: `Malformed JSON in the request body: ${err.message}` });
    }
    if (err instanceof SyntaxError || err.statusCode === 400) {
      return reply.code(400).send({ error: `Malformed request: ${err.message}` });
    }
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.code(err.statusCode).send({ error: err.message });
    }
    if (isDatabaseUnavailable(err)) {
      request.log.warn({ code: (err as { code?: string }).code }, 'database unavailable: answered 503');
      return reply.code(503).header('Retry-After', DATABASE_RETRY_AFTER_SECONDS).send({
        error: 'The database is not reachable right now, so nothing was done: try again in a few seconds',
      });
    }
    request.log.error({ err }, 'unhandled error');
    return reply.code(500).send({ error: 'Internal server error; the request was not completed' });
  });

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({
      error: `No endpoint ${request.method} ${request.url.split('?')[0]}; GET /v1/ lists the endpoints`,
    });
  });
}
