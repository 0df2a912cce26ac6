import type { DomainContext } from '../core/context.ts';
import { NotFoundError, ValidationError } from '../core/errors.ts';
import type { Scope } from './breaker.ts';
import { checkBreakerResume, closeTrips, type Resumer, widerStopText } from './breaker-write.ts';

/**
 * GET /breaker and POST /breaker/resume: the circuit breaker's open decisions of a project (each
 * campaign's, flow's, sending domain's and the project's own), and the resume of a domain's or
 * the project's stop by an admin with a reason. A campaign or flow it paused is resumed on its own
 * (POST /campaigns/{id}/resume, POST /flows/{id}/activate).
 */

type TripRow = {
  id: string;
  scope: string;
  key: string;
  level: string;
  metric: string;
  rate: string | number;
  threshold: string | number;
  messages: number;
  reason: string;
  created_at: Date;
  resumed_at: Date | null;
  resumed_by: string | null;
  resume_reason: string | null;
};

/** The breaker's decisions of these ids (what `breaker.tripped` webhooks announce). */
export function tripsOf(ctx: Pick<DomainContext, 'db'>, ids: string[]) {
  return ctx.db.selectFrom('breaker_trips').selectAll().where('id', 'in', ids).execute();
}

export function presentTrip(r: TripRow) {
  return {
    id: r.id,
    object: 'breaker_trip' as const,
    scope: r.scope as Scope,
    key: r.key,
    level: r.level as 'warn' | 'stop',
    metric: r.metric as 'hard_bounce_rate' | 'complaint_rate',
    rate: Number(r.rate),
    threshold: Number(r.threshold),
    messages: Number(r.messages),
    reason: r.reason,
    created_at: r.created_at.toISOString(),
    resumed_at: r.resumed_at?.toISOString() ?? null,
    resumed_by: r.resumed_by,
    resume_reason: r.resume_reason,
  };
}

/** The project's open decisions, newest first. */
export async function openTrips(ctx: Pick<DomainContext, 'db'>, projectId: string) {
  const rows = await ctx.db
    .selectFrom('breaker_trips')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('resumed_at', 'is', null)
    .orderBy('created_at', 'desc')
    .limit(500)
    .execute();
  return { object: 'list' as const, data: rows.map(presentTrip) };
}

/** Closes the open stops of the project's domains and of the project (or the one named), recorded. */
export async function resumeStops(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  by: Resumer,
  tripId?: string,
) {
  const stops = await ctx.db
    .selectFrom('breaker_trips')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('resumed_at', 'is', null)
    .where('level', '=', 'stop')
    .where('scope', 'in', ['domain', 'project'])
    .execute();
  const chosen = tripId === undefined ? stops : stops.filter((s) => s.id === tripId);
  if (tripId !== undefined && chosen.length === 0)
    throw new NotFoundError(
      'No open stop of a domain or of this project has that id (GET /v1/breaker lists them)',
    );
  if (chosen.length === 0)
    throw new ValidationError('Nothing to resume: no domain of this project and not the project is stopped');
  checkBreakerResume(widerStopText(chosen[0]), by, 'resume it');
  await ctx.db.transaction().execute(async (tx) => {
    for (const stop of chosen) await closeTrips(tx, stop.scope, stop.key, by);
  });
  const closed = await ctx.db
    .selectFrom('breaker_trips')
    .selectAll()
    .where(
      'id',
      'in',
      chosen.map((s) => s.id),
    )
    .execute();
  return { object: 'list' as const, data: closed.map(presentTrip) };
}
