import { sql } from 'kysely';
import type { DomainContext } from '../core/context.ts';
import { NotFoundError, ValidationError } from '../core/errors.ts';
import { type SmtpPorts, submissionAddress } from '../emails/submission-address.ts';
import { sentThisMonth } from '../emails/usage.ts';
import { inboundAddressOf } from '../inbound/recipients.ts';
import { planOrDefault } from './plans.ts';

export type Stream = 'transactional' | 'marketing' | 'automation';

/** Shown in the compliance footer until the project sets its own postal address. */
export const PLACEHOLDER_ADDRESS =
  'Posthorn placeholder address: set your postal address with PATCH /v1/me/footer';

export interface SendBlocker {
  code: 'email_unconfirmed' | 'footer_placeholder';
  message: string;
}

/** What send checks, GET /me and GET /limits need about a project, read in one query. */
export interface ProjectFacts {
  id: string;
  name: string;
  workspace_id: string;
  plan: string;
  footer_address: string | null;
  email_confirmed: boolean;
  verified_domains: string[];
  /** Verified domains whose transactional mail carries the open pixel, and tracked links (migration 0052). */
  open_tracking_domains: string[];
  click_tracking_domains: string[];
  /** Whether the project has any suppressed address (most sends can then skip the lookup). */
  has_suppressions: boolean;
  /** The project's inbound address is <anything>@<inbound_slug>.<POSTHORN_INBOUND_DOMAIN>. */
  inbound_slug: string;
}

/** The facts' select list over `projects p`, `workspaces w` and `accounts a` (the workspace owner). */
export const FACTS_COLUMNS = `p.id as project_id, p.name as project_name, p.workspace_id, p.footer_address, p.inbound_slug, w.plan,
  a.email_confirmed_at is not null as email_confirmed,
  coalesce((select array_agg(d.name order by d.name) from domains d
             where d.project_id = p.id and d.status = 'verified'), '{}') as verified_domains,
  coalesce((select array_agg(d.name) from domains d
             where d.project_id = p.id and d.status = 'verified' and d.open_tracking), '{}') as open_tracking_domains,
  coalesce((select array_agg(d.name) from domains d
             where d.project_id = p.id and d.status = 'verified' and d.click_tracking), '{}') as click_tracking_domains,
  exists (select 1 from suppressions s where s.project_id = p.id) as has_suppressions`;
export const FACTS_JOINS = `join workspaces w on w.id = p.workspace_id join accounts a on a.id = w.owner_account_id`;

export function factsFromRow(row: Record<string, unknown>): ProjectFacts {
  return {
    id: row.project_id as string,
    name: row.project_name as string,
    workspace_id: row.workspace_id as string,
    plan: row.plan as string,
    footer_address: row.footer_address as string | null,
    email_confirmed: row.email_confirmed as boolean,
    verified_domains: row.verified_domains as string[],
    open_tracking_domains: row.open_tracking_domains as string[],
    click_tracking_domains: row.click_tracking_domains as string[],
    has_suppressions: row.has_suppressions as boolean,
    inbound_slug: row.inbound_slug as string,
  };
}

const FACTS_QUERY = {
  name: 'posthorn_project_facts',
  text: `select ${FACTS_COLUMNS} from projects p ${FACTS_JOINS} where p.id = $1`,
};

/** One query for what the send checks and GET /me need to know about a project. */
export async function projectFacts(
  ctx: Pick<DomainContext, 'pool'>,
  projectId: string,
): Promise<ProjectFacts> {
  const { rows } = await ctx.pool.query({ ...FACTS_QUERY, values: [projectId] });
  if (!rows[0]) throw new NotFoundError('Project');
  return factsFromRow(rows[0]);
}

export function sharedDefaultFrom(ctx: Pick<DomainContext, 'config'>): string {
  return `onboarding@${ctx.config.sharedDomain}`;
}

/**
 * "May this project send on this stream?" with every reason it may not. Every send path asks this
 * (API, SMTP, campaigns, flows); the `from` address check is per message, in the send path.
 */
export function sendBlockers(facts: ProjectFacts, stream: Stream): SendBlocker[] {
  const blockers: SendBlocker[] = [];
  if (!facts.email_confirmed) {
    blockers.push({
      code: 'email_unconfirmed',
      message:
        'The account email is not confirmed: the workspace owner signs in to the dashboard with the code emailed to it, or enters the six-character code from the signup email with POST /v1/auth/verify-email/code',
    });
  }
  if (stream !== 'transactional' && (!facts.footer_address || facts.footer_address === PLACEHOLDER_ADDRESS)) {
    blockers.push({
      code: 'footer_placeholder',
      message:
        'Marketing and automation mail needs your postal address in the footer: set it in Settings → Footer address (PATCH /v1/me/footer)',
    });
  }
  return blockers;
}

export type { SmtpPorts } from '../emails/submission-address.ts';

/** GET /me: the project, whether it can send (and why not), and its compliance footer. */
export function accountStatus(
  ctx: Pick<DomainContext, 'config' | 'db'>,
  facts: ProjectFacts,
  smtpPorts?: SmtpPorts,
) {
  const blockers = sendBlockers(facts, 'transactional');
  const defaultFrom =
    facts.verified_domains.length > 0 ? `hello@${facts.verified_domains[0]}` : sharedDefaultFrom(ctx);
  const domainsPart =
    facts.verified_domains.length > 0
      ? `verified: ${facts.verified_domains.join(', ')}`
      : `none verified yet: add one in Domains (POST /v1/domains), or send from ${sharedDefaultFrom(ctx)} on the shared domain`;
  const note = [
    `\`from\` must be an address on a verified domain (${domainsPart}).`,
    ...blockers.map((b) => `${b.message}.`),
  ].join(' ');
  const address = facts.footer_address ?? PLACEHOLDER_ADDRESS;
  return {
    project: { id: facts.id, name: facts.name, object: 'project' as const },
    sending: {
      ready: blockers.length === 0,
      email_confirmed: facts.email_confirmed,
      verified_domains: facts.verified_domains,
      default_from: defaultFrom,
      note,
    },
    footer: { address, is_your_own_address: address !== PLACEHOLDER_ADDRESS },
    inbound: inboundAddressOf(ctx, facts.inbound_slug),
    smtp: submissionAddress(
      ctx.config,
      smtpPorts ?? { port: ctx.config.smtpPort, tls_port: ctx.config.smtpTlsPort },
    ),
  };
}

/** PATCH /me/footer: the postal address printed in marketing and automation footers. */
export async function setFooterAddress(ctx: Pick<DomainContext, 'db'>, projectId: string, address: string) {
  const trimmed = address.trim();
  if (trimmed.length < 10 || trimmed.length > 500) {
    throw new ValidationError('`address` must be a full postal address between 10 and 500 characters');
  }
  if (trimmed === PLACEHOLDER_ADDRESS)
    throw new ValidationError('`address` must be your own postal address, not the placeholder');
  await ctx.db.updateTable('projects').set({ footer_address: trimmed }).where('id', '=', projectId).execute();
  return { address: trimmed, is_your_own_address: true };
}

/** GET /limits: plan, contacts held in the project, and the workspace's sending this month. */
export async function limits(ctx: Pick<DomainContext, 'db'>, facts: ProjectFacts) {
  const projectId = facts.id;
  const plan = planOrDefault(facts.plan);
  const { rows } = await sql<{ contacts: number; sent: number }>`
    select (select count(*) from contacts where project_id = ${projectId}) as contacts,
           ${sentThisMonth(facts.workspace_id)} as sent`.execute(ctx.db);
  const sent = Number(rows[0].sent);
  const included = plan.includedPerMonth;
  return {
    plan: plan.id,
    plan_name: plan.name,
    contacts: { count: Number(rows[0].contacts), limit: plan.contactLimit },
    sending: {
      this_month: sent,
      included_per_month: included,
      remaining: included === null ? null : Math.max(0, included - sent),
      over_limit: included !== null && sent > included,
    },
    features: { ...plan.features },
  };
}
