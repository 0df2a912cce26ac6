import { domainOf, localPartOf } from '../../mail/address.ts';
import { emailIdFromBounceAddress, VERP_PREFIX } from '../../mail/verp.ts';
import type { DomainContext } from '../core/context.ts';
import { DomainError, PlanFeatureError } from '../core/errors.ts';
import { readReportAddress } from '../dmarc/addresses.ts';
import { requireFeature } from '../plans/plans.ts';

/** Where mail addressed to one recipient goes, decided at RCPT TO. */
export type InboundTarget =
  | { kind: 'inbound'; projectId: string }
  /** A bounce or complaint report: `emailId` from the VERP address, or null for the feedback-loop address. */
  | { kind: 'report'; emailId: string | null }
  /** A DMARC aggregate or SMTP TLS report for a sending domain (dmarc/addresses.ts). */
  | { kind: 'dmarc'; domainId: string };

/** An address the MX does not serve: refused at RCPT (never an open relay). */
export class UnknownRecipientError extends DomainError {
  constructor(address: string) {
    super('unknown_recipient', `<${address}>: no such mailbox here (relaying denied)`);
  }
}

/**
 * The one check that a project's plan includes inbound mail, for reading it and receiving it: a
 * 402 naming the plan to upgrade to; when `receiving` mail for an address, the refusal names it.
 */
export function requireInboundPlan(plan: string, receiving?: { address: string }): void {
  try {
    requireFeature(plan, 'inbound');
  } catch (err) {
    if (!receiving || !(err instanceof PlanFeatureError)) throw err;
    throw new PlanFeatureError(
      err.feature,
      err.upgradeTo,
      `${receiving.address} belongs to a project whose plan does not include inbound mail`,
    );
  }
}

/** The feedback-loop address on the shared domain, where providers send complaint (ARF) reports. */
export function feedbackAddress(ctx: Pick<DomainContext, 'config'>): string {
  return `fbl@${ctx.config.sharedDomain}`;
}

/** The project's inbound domain and an address on it (any local part works). */
export function inboundAddressOf(ctx: Pick<DomainContext, 'config'>, slug: string) {
  const domain = `${slug}.${ctx.config.inboundDomain}`;
  return { domain, address: `inbound@${domain}` };
}

/**
 * Decides whether the MX takes mail for an address, and for what: a project's inbound address,
 * a verified domain with inbound enabled, a VERP bounce address or the feedback-loop address.
 * Everything else is refused (UnknownRecipientError), and so is a project whose plan lacks inbound.
 */
export async function acceptsRecipient(
  ctx: Pick<DomainContext, 'config' | 'db' | 'secrets'>,
  address: string,
): Promise<InboundTarget> {
  const lower = address.toLowerCase();
  const local = localPartOf(lower);
  if (!lower.includes('@') || !local) throw new UnknownRecipientError(address);
  const domain = domainOf(lower);

  if (
    local.startsWith(VERP_PREFIX) &&
    (domain === ctx.config.sharedDomain || domain.startsWith('bounces.'))
  ) {
    const emailId = emailIdFromBounceAddress(ctx.secrets.hash, lower);
    if (!emailId) throw new UnknownRecipientError(address);
    return { kind: 'report', emailId };
  }
  if (lower === feedbackAddress(ctx)) return { kind: 'report', emailId: null };
  const reportFor = readReportAddress(ctx, lower);
  if (reportFor) {
    const known = await ctx.db
      .selectFrom('domains')
      .select('id')
      .where('id', '=', reportFor.domainId)
      .executeTakeFirst();
    if (!known) throw new UnknownRecipientError(address);
    return { kind: 'dmarc', domainId: reportFor.domainId };
  }

  const suffix = `.${ctx.config.inboundDomain}`;
  let project: { id: string; plan: string } | undefined;
  if (domain.endsWith(suffix)) {
    const slug = domain.slice(0, -suffix.length);
    if (!/^[a-z0-9]{1,63}$/.test(slug)) throw new UnknownRecipientError(address);
    project = await ctx.db
      .selectFrom('projects as p')
      .innerJoin('workspaces as w', 'w.id', 'p.workspace_id')
      .select(['p.id', 'w.plan'])
      .where('p.inbound_slug', '=', slug)
      .executeTakeFirst();
  } else {
    project = await ctx.db
      .selectFrom('domains as d')
      .innerJoin('projects as p', 'p.id', 'd.project_id')
      .innerJoin('workspaces as w', 'w.id', 'p.workspace_id')
      .select(['p.id', 'w.plan'])
      .where('d.name', '=', domain)
      .where('d.status', '=', 'verified')
      .where('d.inbound_enabled', '=', true)
      .executeTakeFirst();
  }
  if (!project) throw new UnknownRecipientError(address);
  requireInboundPlan(project.plan, { address });
  return { kind: 'inbound', projectId: project.id };
}
