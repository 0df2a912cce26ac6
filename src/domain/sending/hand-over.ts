import type { Selectable } from 'kysely';
import type { Config } from '../../config.ts';
import type { EmailsTable } from '../../db/schema.ts';
import type { ChosenRoute, Routes } from '../../delivery/index.ts';
import type { ProviderTags } from '../../delivery/routes/tags.ts';
import type { Claimant } from '../../delivery/session-pool.ts';
import { type DeliveryError, type DeliveryResult, deliveryErrorOf } from '../../delivery/transport.ts';
import type { DkimKey } from '../../mail/dkim.ts';
import { bounceAddress, returnPathDomain } from '../../mail/verp.ts';
import type { DomainContext } from '../core/context.ts';

/** What sending needs: the domain context and the routes mail leaves by. */
export interface DeliveryDeps {
  ctx: DomainContext;
  routes: Routes;
}

/**
 * The one way a signed message leaves Posthorn (project mail and the service's own): handed to the
 * routes the rules chose, in order, with the VERP return path that names it, on the signing
 * domain's bounce subdomain (or the shared domain), so the return path aligns with d= and a bounce
 * finds its way back to the MX. The next route is tried only when one did not take the message
 * (no connection, greeting or login refused, the connection gone before the data); that failure
 * counts toward the route's health, and the last such failure is the message's when none took it.
 */
export async function handOver(
  deps: DeliveryDeps,
  routes: ChosenRoute[],
  message: {
    id: string;
    key: DkimKey;
    to: string[];
    raw: Buffer;
    messageId: string;
    attempt: number;
    tags: ProviderTags;
    /** Told when a session starts for the message (OutboundMessage.onSession). */
    onSession?: () => void;
    /** Its turn for a session (OutboundMessage.claimant). */
    claimant?: Claimant;
  },
): Promise<DeliveryResult> {
  const { sharedDomain } = deps.ctx.config;
  const domain = returnPathDomain(message.key.domain, sharedDomain);
  const outbound = {
    from: bounceAddress(deps.ctx.secrets.hash, message.id, domain),
    to: message.to,
    raw: message.raw,
    messageId: message.messageId,
    attempt: message.attempt,
    tags: message.tags,
    onSession: message.onSession,
    claimant: message.claimant,
  };
  let failure: DeliveryError | undefined;
  for (const route of routes) {
    try {
      const result = await route.transport.send(outbound);
      route.health.succeeded();
      return result;
    } catch (err) {
      failure = deliveryErrorOf(err);
      // only a failure that proves the route did not take the message may try the next one: any
      // other (a refusal, a timeout after the data) is the message's answer, retried on the same
      // Message-ID by the retry schedule
      if (!failure.notTaken) {
        route.health.answered(failure.responseCode !== undefined);
        throw failure;
      }
      route.health.failed(failure.response);
    }
  }
  throw failure ?? new Error('no route to hand the message to');
}

/** A project email's provider tags: its id, project, stream, and the campaign (with its A/B variation) or flow step behind it. */
export function providerTagsOf(
  row: Pick<
    Selectable<EmailsTable>,
    'id' | 'project_id' | 'stream' | 'campaign_id' | 'flow_id' | 'flow_step' | 'tags'
  >,
): ProviderTags {
  // the service's own mail is tagged as transactional mail of no project
  if (row.stream === 'system') return { email: row.id, project: null, stream: 'transactional' };
  return {
    email: row.id,
    project: row.project_id,
    stream: row.stream,
    campaign: row.campaign_id,
    variation: row.campaign_id ? (row.tags.find((t) => t.name === 'variation')?.value ?? null) : null,
    flow: row.flow_id,
    step: row.flow_step,
  };
}

/**
 * When a deferred message is tried next: the retry schedule's step for the attempt just made (the
 * last step repeats; `waitMs` instead when the hop named its own), or null when that would pass POSTHORN_RETRY_FOR_HOURS since it was created.
 */
export function nextAttemptAt(
  config: Pick<Config, 'retrySchedule' | 'retryForHours'>,
  attempts: number,
  createdAt: Date,
  waitMs?: number,
): Date | null {
  const { retrySchedule, retryForHours } = config;
  const at = Date.now() + (waitMs ?? retrySchedule[Math.min(attempts - 1, retrySchedule.length - 1)] * 1000);
  return at - createdAt.getTime() > retryForHours * 3_600_000 ? null : new Date(at);
}
