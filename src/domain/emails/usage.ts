import { sql } from 'kysely';
import type { DomainContext } from '../core/context.ts';
import { PlanFeatureError, RateLimitError } from '../core/errors.ts';
import { planOrDefault, upgradeFor } from '../plans/plans.ts';
import type { ProjectFacts } from '../plans/project-facts.ts';

/**
 * The workspace's messages this month over all its projects: the one count the monthly allowance
 * and GET /limits read, as a SQL expression that each adds to the one query it already makes.
 */
export function sentThisMonth(workspaceId: string) {
  return sql<number>`(select coalesce(sum(u.sent), 0) from sending_usage u join projects p on p.id = u.project_id
                       where p.workspace_id = ${workspaceId} and u.day >= date_trunc('month', now())::date)`;
}

/**
 * Refuses a send that would pass the plan's monthly allowance (402 on plans without overage) or the
 * shared domain's daily cap per project (429). Counts are read before the insert, so concurrent
 * sends can pass a limit by at most their own number.
 */
export async function checkSendingLimits(
  ctx: Pick<DomainContext, 'db'>,
  facts: ProjectFacts,
  count: number,
  onSharedDomain: number,
) {
  const plan = planOrDefault(facts.plan);
  const needMonthly = plan.includedPerMonth !== null && !plan.allowsOverage;
  if (!needMonthly && onSharedDomain === 0) return;
  const { rows } = await sql<{ month: number; shared_today: number }>`
    select ${sentThisMonth(facts.workspace_id)} as month,
           coalesce((select sum(shared_domain_sent) from sending_usage
                      where project_id = ${facts.id} and day = current_date), 0) as shared_today`.execute(
    ctx.db,
  );
  const month = Number(rows[0].month);
  const sharedToday = Number(rows[0].shared_today);
  if (needMonthly && month + count > (plan.includedPerMonth as number)) {
    const upgrade = upgradeFor('sending_overage', plan);
    throw new PlanFeatureError(
      'sending_overage',
      upgrade?.id ?? null,
      `The ${plan.name} plan includes ${plan.includedPerMonth} messages a month and ${month} were sent; upgrade to ${upgrade?.name ?? 'a larger plan'} to send more this month`,
    );
  }
  if (onSharedDomain > 0 && sharedToday + onSharedDomain > plan.sharedDomainDailyCap) {
    const tomorrow = new Date();
    tomorrow.setUTCHours(24, 0, 0, 0);
    throw new RateLimitError(
      `The shared domain allows ${plan.sharedDomainDailyCap} messages a day per project on the ${plan.name} plan and ${sharedToday} were sent today; verify your own domain in Domains (POST /v1/domains) to send more`,
      Math.ceil((tomorrow.getTime() - Date.now()) / 1000),
      'daily_limit',
    );
  }
}
