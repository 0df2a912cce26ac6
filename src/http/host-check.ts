import type { FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { ForbiddenError } from '../domain/core/errors.ts';

/**
 * DNS rebinding (issue 47): what this machine is served without signing in (the dev mailbox, the
 * operator's /v1/admin/routes) must not be read by a web page that points its own name at
 * 127.0.0.1, whose requests then come from this machine with that name in `Host`. Such endpoints
 * answer only for the configured host (POSTHORN_PUBLIC_URL's or POSTHORN_APP_URL's) or a loopback
 * literal (localhost, 127.0.0.0/8, [::1]): names an outsider's DNS cannot hand to this server.
 */

const LOOPBACK_NAME = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;

/** Why the request's Host is not this server's, or null when it is. */
export function foreignHostReason(
  request: Pick<FastifyRequest, 'hostname'>,
  config: Pick<Config, 'publicUrl' | 'appUrl'>,
  endpoint: string,
): string | null {
  const host = request.hostname.toLowerCase();
  const configured = [...new Set([config.publicUrl, config.appUrl].map((u) => new URL(u).hostname))];
  if (LOOPBACK_NAME.test(host) || configured.includes(host)) return null;
  return `${endpoint} answers only for the Host ${configured.join(' or ')} or a loopback address (localhost, 127.0.0.1, [::1]), not for ${host ? `"${host}"` : 'a request without one'}: open it at one of those, or set POSTHORN_PUBLIC_URL (or POSTHORN_APP_URL) to the address you use`;
}

/** Throws a 403 saying why, unless the request's Host is this server's. */
export function refuseForeignHost(
  request: Pick<FastifyRequest, 'hostname'>,
  config: Pick<Config, 'publicUrl' | 'appUrl'>,
  endpoint: string,
): void {
  const reason = foreignHostReason(request, config, endpoint);
  if (reason) throw new ForbiddenError(reason);
}
