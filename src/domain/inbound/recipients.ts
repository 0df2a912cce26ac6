import { emailIdFromBounceAddress, VERP_PREFIX } from '../../mail/verp.ts';
import type { DomainContext } from '../context.ts';
import { planOrDefault } from '../plans.ts';

/** Where mail addressed to one recipient goes, decided at RCPT TO. */
export type InboundTarget =
  | { kind: 'inbound'; projectId: string }
  /** A bounce or complaint report: `emailId` from the VERP address, or null for the feedback-loop address. */
  | { kind: 'report'; emailId: string | null }
  | { kind: 'refused'; reason: string };

/** The feedback-loop address on the shared domain, where providers send complaint (ARF) reports. */
export function feedbackAddress(ctx: DomainContext): string {
  return `fbl@${ctx.config.sharedDomain}`;
}

/** The project's inbound domain and an address on it (any local part works). */
export function inboundAddressOf(ctx: DomainContext, slug: string) {
  const domain = `${slug}.${ctx.config.inboundDomain}`;
  return { domain, address: `inbound@${domain}` };
}

/**
 * Decides whether the MX takes mail for an address, and for what: a project's inbound address,
 * a verified domain with inbound enabled, a VERP bounce address or the feedback-loop address.
 * Everything else is refused (never an open relay).
 */
export async function resolveInboundRecipient(
  ctx: DomainContext,
  address: string,
): Promise<InboundTarget | null> {
  const lower = address.toLowerCase();
  const at = lower.lastIndexOf('@');
  if (at <= 0) return null;
  const local = lower.slice(0, at);
  const domain = lower.slice(at + 1);

  if (
    local.startsWith(VERP_PREFIX) &&
    (domain === ctx.config.sharedDomain || domain.startsWith('bounces.'))
  ) {
    const emailId = emailIdFromBounceAddress(ctx.secrets.hash, lower);
    return emailId ? { kind: 'report', emailId } : null;
  }
  if (lower === feedbackAddress(ctx)) return { kind: 'report', emailId: null };

  const suffix = `.${ctx.config.inboundDomain}`;
  let project: { id: string; plan: string } | undefined;
  if (domain.endsWith(suffix)) {
    const slug = domain.slice(0, -suffix.length);
    if (!/^[a-z0-9]{1,63}$/.test(slug)) return null;
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
  if (!project) return null;
  if (!planOrDefault(project.plan).features.inbound) {
    return {
      kind: 'refused',
      reason: `${address} belongs to a project whose plan does not include inbound mail`,
    };
  }
  return { kind: 'inbound', projectId: project.id };
}
