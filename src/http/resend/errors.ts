import type { FastifyRequest } from 'fastify';

/** Resend's error shape for the door (plugin.ts), and for the router's refusals of its paths (request-checks.ts). */

/** Resend's error names, by status. */
function errorName(status: number, request: FastifyRequest, code: unknown): string {
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
