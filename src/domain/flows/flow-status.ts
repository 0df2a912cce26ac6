import type { FlowStatus } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError } from '../core/errors.ts';
import type { ProjectFacts } from '../plans/project-facts.ts';
import type { GateOverride } from '../reputation/gate-pass.ts';
import {
  BREAKER_PAUSE,
  checkBreakerResume,
  closeTrips,
  passWiderStops,
  type Resumer,
} from '../shaping/breaker-write.ts';
import { nudgeAdvance } from './engine.ts';
import { flowSenders, passFlowGate } from './flow-gate.ts';
import { checkActivation, type FlowRow, findFlow, flowView, loadDefinition } from './flows.ts';
import { checkReferences } from './references.ts';
import { type FlowActor, requireWebhookRights, webhookOwner } from './webhook-rights.ts';

// A flow's life after it is made: activate, pause, archive, each a move between statuses that a
// concurrent move cannot skip (the update names the statuses it moves from).

/** Moves the flow from one of `from` to `to` (409 naming its status otherwise). */
async function transition(
  ctx: DomainContext,
  projectId: string,
  id: string,
  from: FlowStatus[],
  to: FlowStatus,
  refusal: (row: FlowRow) => string,
  also: Partial<Pick<FlowRow, 'webhook_owner_id'>> = {},
): Promise<FlowRow> {
  const current = await findFlow(ctx, projectId, id);
  const row = await ctx.db
    .updateTable('flows')
    // a status the user chose needs no reason
    .set({ status: to, status_reason: null, ...also, updated_at: new Date() })
    .where('id', '=', current.id)
    .where('status', 'in', from)
    .returningAll()
    .executeTakeFirst();
  if (row) return row;
  throw new ConflictError(refusal(await findFlow(ctx, projectId, id)));
}

/**
 * POST /flows/{id}/activate: a draft or paused flow starts enrolling (a paused one's enrollments go
 * on where they were). Needs the plan's `automations` (402), a sendable account and a real footer
 * (400), the role its webhook steps need (403; whoever activates answers for them from then on),
 * its definition still valid in the project (templates, senders, lists, messages: 400), and the
 * bulk-sender gate for each address it sends from (400; a project admin may override, recorded).
 */
export async function activateFlow(
  ctx: DomainContext,
  facts: ProjectFacts,
  id: string,
  actor: FlowActor,
  resumer?: Resumer,
  override?: GateOverride,
) {
  const current = await findFlow(ctx, facts.id, id);
  // the circuit breaker paused it: only an admin goes on, saying why (recorded below)
  const tripped = current.status === 'paused' && current.status_reason?.startsWith(BREAKER_PAUSE);
  const by = resumer ?? { who: `account ${actor.accountId}`, admin: actor.role !== 'member' };
  if (tripped) checkBreakerResume(current.status_reason as string, by, 'activate');
  checkActivation(facts, current.name);
  const def = await loadDefinition(ctx.db, current.id, current.version);
  requireWebhookRights(def, actor);
  const settled = await checkReferences(ctx, facts, def);
  // a domain or project the breaker stopped: the admin's reason resumes it too (else 409)
  for (const sender of flowSenders(facts.id, settled))
    await passWiderStops(ctx.db, facts.id, sender.from.address, by.reason ? by : null, 'activate it');
  await passFlowGate(ctx, facts, settled, current, override);
  const row = await transition(
    ctx,
    facts.id,
    id,
    ['draft', 'paused'],
    'active',
    (r) =>
      r.status === 'active'
        ? `Flow "${r.name}" is already active`
        : `Flow "${r.name}" is archived: it cannot be activated`,
    { webhook_owner_id: webhookOwner(def, actor) },
  );
  if (tripped) await ctx.db.transaction().execute((tx) => closeTrips(tx, 'flow', row.id, by));
  // a resumed flow's enrollments that fell due while it was paused go on now
  await nudgeAdvance(ctx.db);
  return flowView(ctx, row);
}

/** POST /flows/{id}/pause: an active flow stops enrolling and advancing; enrollments stay where they are. */
export async function pauseFlow(ctx: DomainContext, projectId: string, id: string) {
  const row = await transition(ctx, projectId, id, ['active'], 'paused', (r) =>
    r.status === 'paused'
      ? `Flow "${r.name}" is already paused`
      : `Flow "${r.name}" is ${r.status}: only an active flow can be paused`,
  );
  return flowView(ctx, row);
}

/**
 * POST /flows/{id}/archive: a draft or paused flow becomes read-only for good; its enrollments still
 * running are cancelled (409 while active: pause it first).
 */
export async function archiveFlow(ctx: DomainContext, projectId: string, id: string) {
  const row = await transition(ctx, projectId, id, ['draft', 'paused'], 'archived', (r) =>
    r.status === 'active'
      ? `Flow "${r.name}" is active: pause it before archiving it`
      : `Flow "${r.name}" is already archived`,
  );
  await ctx.db
    .updateTable('flow_enrollments')
    .set({
      status: 'cancelled',
      exit_reason: 'flow_archived',
      step_id: null,
      wake_at: null,
      waiting_for: null,
      finished_at: new Date(),
      updated_at: new Date(),
    })
    .where('flow_id', '=', row.id)
    .where('status', '=', 'active')
    .execute();
  return flowView(ctx, row);
}
