import type { Selectable } from 'kysely';
import type { DomainsTable } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { ValidationError } from '../core/errors.ts';
import { requireInboundPlan } from '../inbound/recipients.ts';
import { applyRate } from '../shaping/sending-rates.ts';
import { warmupChanges } from '../shaping/warmup.ts';
import { forgetWarmingDomains } from '../shaping/warmup-count.ts';
import { findDomain, presentDomain } from './domains.ts';

type DomainRow = Selectable<DomainsTable>;

/**
 * PATCH /domains/{id}: turns receiving on or off (when on, with a plan with inbound, mail to any
 * address at the verified domain is stored as inbound mail; its MX record must point to Posthorn),
 * sets the domain's sending rate for marketing and automation mail (see emails/throttle.ts), and
 * starts, changes or ends its warm-up plan (reputation/warmup.ts), and turns open and click
 * tracking of the transactional mail sent from it on or off.
 */
export async function updateDomain(
  ctx: DomainContext,
  project: { id: string; plan: string },
  id: string,
  input: {
    inbound_enabled?: unknown;
    rate?: unknown;
    warmup?: unknown;
    open_tracking?: unknown;
    click_tracking?: unknown;
  },
) {
  const row = await findDomain(ctx, project.id, id);
  const changes: Partial<
    Pick<
      DomainRow,
      | 'inbound_enabled'
      | 'rate_per_second'
      | 'rate_per_hour'
      | 'warmup_started_on'
      | 'warmup_schedule'
      | 'open_tracking'
      | 'click_tracking'
    >
  > = {};
  if (input.warmup !== undefined) Object.assign(changes, warmupChanges(input.warmup, row));
  if (input.inbound_enabled !== undefined) {
    if (typeof input.inbound_enabled !== 'boolean')
      throw new ValidationError('`inbound_enabled` must be true or false');
    if (input.inbound_enabled) requireInboundPlan(project.plan);
    changes.inbound_enabled = input.inbound_enabled;
  }
  if (input.rate !== undefined) Object.assign(changes, applyRate(row, input.rate));
  // transactional mail from the domain: the open pixel and tracked links (campaigns keep their own)
  for (const field of ['open_tracking', 'click_tracking'] as const) {
    if (input[field] === undefined) continue;
    if (typeof input[field] !== 'boolean') throw new ValidationError(`\`${field}\` must be true or false`);
    changes[field] = input[field];
  }
  if (Object.keys(changes).length === 0) return presentDomain(ctx, row);
  const updated = await ctx.db
    .updateTable('domains')
    .set(changes)
    .where('id', '=', row.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  if (input.warmup !== undefined) forgetWarmingDomains(ctx.db);
  return presentDomain(ctx, updated);
}
