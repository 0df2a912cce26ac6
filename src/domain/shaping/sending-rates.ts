import type { DomainContext } from '../core/context.ts';
import { ValidationError } from '../core/errors.ts';

/** The most a rate may say: far above what one node sends, low enough to stay a sane number. */
const MAX_PER_SECOND = 100_000;
const MAX_PER_HOUR = 360_000_000;

/** A rate as the API shows and takes it: null means no limit (or, on a campaign, the project's). */
export interface RateInput {
  per_second?: number | null;
  per_hour?: number | null;
}

export interface RateColumns {
  rate_per_second: number | null;
  rate_per_hour: number | null;
}

function limit(value: unknown, field: string, max: number): number | null {
  if (value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max)
    throw new ValidationError(`\`${field}\` must be a whole number from 1 to ${max}, or null for no limit`);
  return value;
}

/**
 * A rate request applied to the stored columns: only the parts it gives change, null clears one.
 * Messages per second and per hour; throttling spaces messages by the stricter of the two.
 */
export function applyRate(current: RateColumns, input: unknown, field = 'rate'): RateColumns {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw new ValidationError(`\`${field}\` must be an object {per_second, per_hour}`);
  const { per_second, per_hour } = input as RateInput;
  return {
    rate_per_second:
      per_second === undefined
        ? current.rate_per_second
        : limit(per_second, `${field}.per_second`, MAX_PER_SECOND),
    rate_per_hour:
      per_hour === undefined ? current.rate_per_hour : limit(per_hour, `${field}.per_hour`, MAX_PER_HOUR),
  };
}

export function presentRate(row: RateColumns) {
  return { per_second: row.rate_per_second, per_hour: row.rate_per_hour };
}

/** GET /me/sending-rate: the project's rate for marketing and automation mail. */
export async function projectRate(ctx: Pick<DomainContext, 'db'>, projectId: string) {
  const row = await ctx.db
    .selectFrom('projects')
    .select(['rate_per_second', 'rate_per_hour'])
    .where('id', '=', projectId)
    .executeTakeFirstOrThrow();
  return { object: 'sending_rate' as const, ...presentRate(row) };
}

/**
 * PATCH /me/sending-rate: the project's rate for marketing and automation mail (the default of its
 * campaigns, which may override it); transactional mail is never throttled.
 */
export async function setProjectRate(ctx: Pick<DomainContext, 'db'>, projectId: string, input: unknown) {
  const current = await projectRate(ctx, projectId);
  const next = applyRate({ rate_per_second: current.per_second, rate_per_hour: current.per_hour }, input);
  await ctx.db.updateTable('projects').set(next).where('id', '=', projectId).execute();
  return { object: 'sending_rate' as const, ...presentRate(next) };
}
