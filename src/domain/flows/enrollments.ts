import { type Selectable, sql } from 'kysely';
import type { EnrollmentStatus, FlowEnrollmentsTable } from '../../db/schema.ts';
import { addressPrefixPattern } from '../core/addresses.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError, NotFoundError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import { enrollManually } from './enroll.ts';
import { findFlow } from './flows.ts';

type EnrollmentRow = Selectable<FlowEnrollmentsTable> & { email: string };

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** An enrollment as the API shows it: where it is, how it got there (history), how it ended. */
export function presentEnrollment(row: EnrollmentRow) {
  return {
    id: row.id,
    object: 'flow_enrollment' as const,
    flow_id: row.flow_id,
    version: row.version,
    contact: { id: row.contact_id, email: row.email },
    status: row.status,
    current_step: row.step_id,
    wake_at: iso(row.wake_at),
    exit_reason: row.exit_reason,
    converted_at: iso(row.converted_at),
    history: row.history,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    finished_at: iso(row.finished_at),
  };
}

function enrollmentsOf(ctx: Pick<DomainContext, 'db'>, flowId: string) {
  return ctx.db
    .selectFrom('flow_enrollments as fe')
    .innerJoin('contacts as c', 'c.id', 'fe.contact_id')
    .selectAll('fe')
    .select('c.email')
    .where('fe.flow_id', '=', flowId);
}

/** GET /flows/{id}/enrollments: newest first, paginated, optionally of one status or contacts whose address starts so. */
export async function listEnrollments(
  ctx: DomainContext,
  projectId: string,
  flowId: string,
  q: { limit: number; offset: number; status?: EnrollmentStatus; search?: string },
) {
  const flow = await findFlow(ctx, projectId, flowId);
  let count = ctx.db
    .selectFrom('flow_enrollments as fe')
    .innerJoin('contacts as c', 'c.id', 'fe.contact_id')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('fe.flow_id', '=', flow.id);
  let rows = enrollmentsOf(ctx, flow.id);
  if (q.status) {
    count = count.where('fe.status', '=', q.status);
    rows = rows.where('fe.status', '=', q.status);
  }
  if (q.search !== undefined && q.search.trim() !== '') {
    const pattern = addressPrefixPattern(q.search);
    count = count.where('c.email', 'like', pattern);
    rows = rows.where('c.email', 'like', pattern);
  }
  const [data, total] = await Promise.all([
    rows.orderBy('fe.created_at', 'desc').orderBy('fe.id', 'desc').limit(q.limit).offset(q.offset).execute(),
    count.executeTakeFirstOrThrow(),
  ]);
  return { data: data.map(presentEnrollment), total: Number(total.n), limit: q.limit, offset: q.offset };
}

async function findEnrollment(ctx: Pick<DomainContext, 'db'>, projectId: string, flowId: string, id: string) {
  const flow = await findFlow(ctx, projectId, flowId);
  if (!isUuid(id)) throw new NotFoundError('Enrollment');
  const row = await enrollmentsOf(ctx, flow.id).where('fe.id', '=', id).executeTakeFirst();
  if (!row) throw new NotFoundError('Enrollment');
  return row;
}

/** GET /flows/{id}/enrollments/{enrollment_id}: with its history and current step. */
export async function getEnrollment(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  flowId: string,
  id: string,
) {
  return presentEnrollment(await findEnrollment(ctx, projectId, flowId, id));
}

/** POST /flows/{id}/enrollments {email}: the manual trigger (see enroll.ts); returns the new enrollment. */
export async function createEnrollment(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  flowId: string,
  email: string,
) {
  const id = await enrollManually(ctx, projectId, flowId, email);
  return getEnrollment(ctx, projectId, flowId, id);
}

/**
 * DELETE /flows/{id}/enrollments/{enrollment_id}: cancels an active enrollment (it stops where it
 * is; nothing more is sent). One the engine is advancing is cancelled once that batch commits (the
 * row's lock), so a message of that batch may still go. A finished enrollment: 409.
 */
export async function cancelEnrollment(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  flowId: string,
  id: string,
) {
  const current = await findEnrollment(ctx, projectId, flowId, id);
  const now = new Date();
  const cancelled = await ctx.db
    .updateTable('flow_enrollments')
    .set({
      status: 'cancelled',
      exit_reason: 'cancelled',
      step_id: null,
      wake_at: null,
      waiting_for: null,
      finished_at: now,
      updated_at: now,
      // where it stopped stays in its history
      history: sql<string>`history || jsonb_build_array(jsonb_build_object('step_id', step_id, 'type', 'cancel',
                 'at', ${now.toISOString()}::text, 'outcome', 'cancelled'))`,
    })
    .where('id', '=', current.id)
    .where('status', '=', 'active')
    .executeTakeFirst();
  if (Number(cancelled.numUpdatedRows) === 0) {
    const after = await findEnrollment(ctx, projectId, flowId, id);
    throw new ConflictError(
      `Enrollment ${after.id} is already ${after.status}: only an active one can be cancelled`,
    );
  }
  return getEnrollment(ctx, projectId, flowId, id);
}
