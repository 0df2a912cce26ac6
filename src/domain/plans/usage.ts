import { sql } from 'kysely';
import type { DomainContext } from '../core/context.ts';
import { planOrDefault } from './plans.ts';
import type { ProjectFacts } from './project-facts.ts';

/**
 * What Posthorn counts against a plan, for the Resend door's `usage.get`: messages sent today and
 * this month over the workspace (the plan's allowance is the workspace's, as GET /v1/limits says),
 * mail received by the project, and what the project holds (contacts, lists, campaigns, domains)
 * or ran this month (flow enrollments). Day and month are UTC.
 */
export async function usageOf(ctx: Pick<DomainContext, 'db' | 'config'>, facts: ProjectFacts) {
  const plan = planOrDefault(facts.plan);
  const { rows } = await sql<Record<string, string | number>>`
    with usage as (
      select u.day, u.sent, u.shared_domain_sent from sending_usage u join projects p on p.id = u.project_id
       where p.workspace_id = ${facts.workspace_id} and u.day >= date_trunc('month', now())::date)
    select (select coalesce(sum(sent), 0) from usage where day = current_date) as sent_today,
           (select coalesce(sum(sent), 0) from usage) as sent_month,
           (select count(*) from inbound_messages where project_id = ${facts.id}
              and created_at >= date_trunc('day', now())) as received_today,
           (select count(*) from inbound_messages where project_id = ${facts.id}
              and created_at >= date_trunc('month', now())) as received_month,
           (select count(*) from contacts where project_id = ${facts.id}) as contacts,
           (select count(*) from lists where project_id = ${facts.id}) as lists,
           (select count(*) from campaigns where project_id = ${facts.id}) as campaigns,
           (select count(*) from domains where project_id = ${facts.id}) as domains,
           (select count(*) from flow_enrollments where project_id = ${facts.id}
              and created_at >= date_trunc('month', now())) as enrollments_month`.execute(ctx.db);
  const n = Object.fromEntries(Object.entries(rows[0]).map(([k, v]) => [k, Number(v)]));
  const now = new Date();
  const tomorrow = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
  const nextMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return {
    plan,
    sent: { today: n.sent_today, month: n.sent_month },
    received: { today: n.received_today, month: n.received_month },
    contacts: n.contacts,
    lists: n.lists,
    campaigns: n.campaigns,
    domains: n.domains,
    enrollments: n.enrollments_month,
    day_resets_at: tomorrow.toISOString(),
    month_resets_at: nextMonth.toISOString(),
    rate_limit_per_second: ctx.config.rateLimitPerSecond,
  };
}
