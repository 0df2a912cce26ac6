import type { Config } from '../../config.ts';
import type { ChosenRoute, Routes } from '../../delivery/index.ts';
import type { DeliveryResult } from '../../delivery/transport.ts';
import type { DkimKey } from '../../mail/dkim.ts';
import { bounceAddress } from '../../mail/verp.ts';
import type { DomainContext } from '../core/context.ts';

/** What sending needs: the domain context and the routes mail leaves by. */
export interface DeliveryDeps {
  ctx: DomainContext;
  routes: Routes;
}

/**
 * The one way a signed message leaves Posthorn (project mail and the service's own): handed to the
 * transport of the route the rules chose, with the VERP return path that names it, on the signing domain's bounce subdomain (or
 * the shared domain), so the return path aligns with d= and a bounce finds its way back to the MX.
 */
export function handOver(
  deps: DeliveryDeps,
  route: ChosenRoute,
  message: { id: string; key: DkimKey; to: string[]; raw: Buffer; messageId: string; attempt: number },
): Promise<DeliveryResult> {
  const { sharedDomain } = deps.ctx.config;
  const domain = message.key.domain === sharedDomain ? sharedDomain : `bounces.${message.key.domain}`;
  return route.transport.send({
    from: bounceAddress(deps.ctx.secrets.hash, message.id, domain),
    to: message.to,
    raw: message.raw,
    messageId: message.messageId,
    attempt: message.attempt,
  });
}

/**
 * When a deferred message is tried next: the retry schedule's step for the attempt just made (the
 * last step repeats), or null when that would pass POSTHORN_RETRY_FOR_HOURS since it was created.
 */
export function nextAttemptAt(
  config: Pick<Config, 'retrySchedule' | 'retryForHours'>,
  attempts: number,
  createdAt: Date,
): Date | null {
  const { retrySchedule, retryForHours } = config;
  const at = Date.now() + retrySchedule[Math.min(attempts - 1, retrySchedule.length - 1)] * 1000;
  return at - createdAt.getTime() > retryForHours * 3_600_000 ? null : new Date(at);
}
