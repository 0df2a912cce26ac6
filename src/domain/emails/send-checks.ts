import { domainOf } from '../../mail/address.ts';
import type { DomainContext } from '../core/context.ts';
import { SendRefusedError } from '../core/errors.ts';
import { type ProjectFacts, type Stream, sendBlockers, sharedDefaultFrom } from '../plans/project-facts.ts';
import { checkSendingLimits } from './usage.ts';

// The send checks of every path (API, batch, SMTP, campaign start, resume and test, flow sends),
// written once: they look at the project's facts, the stream, the `from` and the count, never at a
// campaign or a flow.

/** Refuses (400) while the account or the footer keeps the project from sending on the stream, naming each fix. */
export function checkStream(facts: ProjectFacts, stream: Stream, who = 'Sending is not possible yet'): void {
  const blockers = sendBlockers(facts, stream);
  if (blockers.length > 0)
    throw new SendRefusedError(blockers[0].code, `${who}: ${blockers.map((b) => b.message).join('; ')}`);
}

/**
 * The `from` rule: an address on a verified domain of the project, or the shared domain's default
 * address (true when it is that one, which counts against its own limit).
 */
export function checkFromAddress(
  ctx: DomainContext,
  facts: ProjectFacts,
  address: string,
  prefix = '',
): boolean {
  const shared = sharedDefaultFrom(ctx);
  if (address === shared) return true;
  const domain = domainOf(address);
  if (!facts.verified_domains.includes(domain)) {
    throw new SendRefusedError(
      'unverified_domain',
      `${prefix}\`from\` ${address} is not on a verified domain of this project: ${
        facts.verified_domains.length
          ? `verified domains are ${facts.verified_domains.join(', ')}`
          : 'this project has no verified domain yet'
      }. Add and verify ${domain} in Domains (POST /v1/domains), or send from ${shared}`,
    );
  }
  return false;
}

/** One message's sender: the stream open to the project and its `from` allowed (true when on the shared domain). */
export function checkSender(ctx: DomainContext, facts: ProjectFacts, stream: Stream, from: string): boolean {
  checkStream(facts, stream);
  return checkFromAddress(ctx, facts, from);
}

/** What one send is, for its checks. */
export type SendCheck = {
  stream: Stream;
  /** Who is refused, in a blocker's message ("Campaign "Spring" cannot be sent"). */
  who?: string;
} & (
  | {
      /** Each message's `from`. */
      from: readonly string[];
      /** Names a message in a `from` refusal (a batch's "Message 3: "). */
      label?: (i: number) => string;
    }
  | {
      /** The one `from` of every message. */
      from: string;
      /** How many messages; a count that costs a query is read only once the sender passed. */
      count: number | (() => Promise<number>);
    }
);

/**
 * The send checks: the account may send on the stream (400), each `from` is on a verified domain or
 * the shared default address (400), and the plan's monthly allowance (402) and the shared domain's
 * daily cap (429) hold for the messages. Returns how many go from the shared domain.
 */
export async function checkSend(ctx: DomainContext, facts: ProjectFacts, send: SendCheck): Promise<number> {
  checkStream(facts, send.stream, send.who);
  let count: number;
  let onShared = 0;
  if ('count' in send) {
    const shared = checkFromAddress(ctx, facts, send.from);
    count = typeof send.count === 'number' ? send.count : await send.count();
    if (shared) onShared = count;
  } else {
    send.from.forEach((from, i) => {
      if (checkFromAddress(ctx, facts, from, send.label?.(i))) onShared++;
    });
    count = send.from.length;
  }
  await checkSendingLimits(ctx, facts, count, onShared);
  return onShared;
}
