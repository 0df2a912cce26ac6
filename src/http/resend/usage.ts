import type { FastifyInstance } from 'fastify';
import type { DomainContext } from '../../domain/core/context.ts';
import { usageOf } from '../../domain/plans/usage.ts';
import { projectFactsOf } from '../auth.ts';
import { typed } from '../schemas.ts';

/**
 * Resend's `usage.get` as what Posthorn counts (src/domain/plans/usage.ts): messages sent against
 * the plan's monthly allowance (received mail counted beside them, not against it; no daily
 * allowance: `limit` null), contacts against the plan's contact limit (null when unmetered), lists
 * as segments, campaigns as broadcasts, flow enrollments as automation runs, and the API's rate
 * limit per second. Posthorn has no AI credits: 0 of none.
 */

const project = { auth: 'project' as const };

export async function resendUsageRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  app.get('/usage', { config: project, schema: { hide: true } }, async (request) => {
    const u = await usageOf(ctx, await projectFactsOf(request, ctx));
    const unmetered = (limit: number | null) => (limit === 0 ? null : limit);
    return {
      object: 'usage',
      emails: {
        daily: {
          used: u.sent.today,
          limit: null,
          sent: u.sent.today,
          received: u.received.today,
          resets_at: u.day_resets_at,
        },
        monthly: {
          used: u.sent.month,
          limit: u.plan.includedPerMonth,
          sent: u.sent.month,
          received: u.received.month,
          resets_at: u.month_resets_at,
        },
      },
      contacts: { used: u.contacts, limit: unmetered(u.plan.contactLimit) },
      segments: { used: u.lists, limit: null },
      broadcasts: { used: u.campaigns, limit: null },
      ai_credits: { used: 0, limit: 0, next_increase_at: null },
      automation_runs: { used: u.enrollments, limit: null, resets_at: u.month_resets_at },
      domains: { used: u.domains, limit: null },
      rate_limit: { limit: u.rate_limit_per_second, duration: '1s' },
    };
  });
}
