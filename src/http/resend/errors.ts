import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { parseMailbox } from '../../domain/core/addresses.ts';
import { SendRefusedError } from '../../domain/core/errors.ts';
import { describeValidationError } from '../validation.ts';

/**
 * The door's one error translation (issue 51): Resend's error shape for the door (plugin.ts), and
 * for the router's refusals of its paths (request-checks.ts), with Resend's documented names and
 * statuses where its users rely on them. /v1 keeps its own errors.
 */

/** Resend's names the door gives itself (`ResendRefusal`), kept when the answer is translated. */
const RESEND_NAMES = new Set([
  'missing_required_field',
  'invalid_from_address',
  'invalid_idempotency_key',
  'restricted_api_key',
  // its 403 for a `from` on a domain that is not verified (kept: 403 is otherwise restricted_api_key)
  'validation_error',
]);

/** A refusal in Resend's own terms: its status and name (see resend.com/docs/api-reference/errors). */
export class ResendRefusal extends Error {
  readonly status: number;
  readonly resendName: string;
  constructor(status: number, resendName: string, message: string) {
    super(message);
    this.status = status;
    this.resendName = resendName;
  }
}

/** Resend's error names, by status. */
function errorName(status: number, request: FastifyRequest, code: unknown): string {
  if (typeof code === 'string' && RESEND_NAMES.has(code)) return code;
  if (status === 401) return request.headers.authorization ? 'invalid_api_key' : 'missing_api_key';
  if (status === 403) return 'restricted_api_key';
  if (status === 404) return 'not_found';
  if (status === 405) return 'method_not_allowed';
  if (status === 409) return request.headers['idempotency-key'] ? 'invalid_idempotent_request' : 'conflict';
  if (status === 429)
    return code === 'rate_limited' || code === undefined ? 'rate_limit_exceeded' : 'daily_quota_exceeded';
  if (status === 402) return 'plan_upgrade_required';
  if (status >= 500) return 'application_error';
  return 'validation_error';
}

/** Whether a request target is the door's: `/resend` and below. */
export function isResendPath(url: string): boolean {
  return url === '/resend' || url.startsWith('/resend/') || url.startsWith('/resend?');
}

/** One error in Resend's shape. */
export function resendError(status: number, request: FastifyRequest, message: string, code?: unknown) {
  return { statusCode: status, name: errorName(status, request, code), message };
}

/**
 * The door's error handler: a `ResendRefusal` and a missing field (Resend's
 * `422 missing_required_field`) are answered here; every other error goes on to the app's handler.
 */
export function installResendRefusals(app: FastifyInstance) {
  app.setErrorHandler((error: FastifyError | ResendRefusal, _request, reply) => {
    if (error instanceof ResendRefusal)
      return reply.code(error.status).send({ error: error.message, code: error.resendName });
    // Resend answers a `from` on a domain that is not verified `403 validation_error` (/v1: 400)
    if (error instanceof SendRefusedError && error.reason === 'unverified_domain')
      return reply.code(403).send({ error: error.message, code: 'validation_error' });
    const validation = (error as FastifyError).validation;
    if (validation?.[0]?.keyword === 'required' && (error as FastifyError).validationContext === 'body')
      return reply.code(422).send({
        error: describeValidationError(validation as never, 'body'),
        code: 'missing_required_field',
      });
    throw error;
  });
}

/** Resend's `invalid_idempotency_key`: an `Idempotency-Key` of 1 to 256 characters. */
export function checkIdempotencyKey(request: FastifyRequest) {
  const header = request.headers['idempotency-key'];
  if (header === undefined) return;
  const key = Array.isArray(header) ? header[0] : header;
  if (key.length < 1 || key.length > 256)
    throw new ResendRefusal(
      400,
      'invalid_idempotency_key',
      'Header `Idempotency-Key` must be 1 to 256 characters',
    );
}

/** Resend's `422 invalid_from_address`: a `from` that is not `address` or `Name <address>`. */
export function checkFrom(from: unknown, prefix = '') {
  if (typeof from !== 'string') return;
  try {
    parseMailbox(from, 'from');
  } catch (err) {
    throw new ResendRefusal(422, 'invalid_from_address', `${prefix}${(err as Error).message}`);
  }
}
