import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { Selectable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { FlowsTable } from '../../db/schema.ts';
import { parseMailbox } from '../core/addresses.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError, ValidationError } from '../core/errors.ts';
import { deleteUnlessBusy, findInProject } from '../core/find.ts';
import { type Page, readPage } from '../core/pages.ts';
import { checkStream } from '../emails/send-checks.ts';
import { requireFeature } from '../plans/plans.ts';
import { type ProjectFacts, sharedDefaultFrom } from '../plans/project-facts.ts';
import { type FlowDefinition, parseDefinition } from './definition.ts';
import { passFlowGate } from './flow-gate.ts';
import { checkReferences } from './references.ts';
import { emptyCounts, enrollmentCounts, flowStats } from './stats.ts';
import { type FlowActor, requireWebhookRights, webhookOwner } from './webhook-rights.ts';

export type { FlowActor } from './webhook-rights.ts';

export type FlowRow = Selectable<FlowsTable>;

/** A flow as the API receives it: POST gives `name`, `trigger` and `steps`; PATCH any part. */
export interface FlowInput {
  name?: string;
  /** On create only: `draft` (the default) or `active` (activated at once, with every activation check). */
  status?: string;
  trigger?: unknown;
  steps?: unknown[];
  from?: string | null;
  from_name?: string | null;
  reentry?: unknown;
  goal?: unknown;
}

const iso = (d: Date) => d.toISOString();

/** The flow's row and definition as the API shows them; `stats` is added by the caller. */
function presentFlow(row: FlowRow, def: FlowDefinition) {
  return {
    id: row.id,
    object: 'flow' as const,
    name: row.name,
    status: row.status,
    status_reason: row.status_reason,
    version: row.version,
    trigger: def.trigger,
    steps: def.steps,
    reentry: def.reentry,
    goal: def.goal,
    from: row.from_address,
    from_name: row.from_name,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** The definition of one version of a flow (each version is stored whole). */
export async function loadDefinition(db: Db, flowId: string, version: number): Promise<FlowDefinition> {
  const row = await db
    .selectFrom('flow_versions')
    .select('definition')
    .where('flow_id', '=', flowId)
    .where('version', '=', version)
    .executeTakeFirstOrThrow();
  return row.definition as FlowDefinition;
}

export function findFlow(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string): Promise<FlowRow> {
  return findInProject(ctx.db, 'flows', 'Flow', projectId, id);
}

/** The flow with its current definition and full stats (GET, and what edits and actions answer). */
/** A flow as the API shows it: its definition and enrollment counts. */
export async function flowView(ctx: Pick<DomainContext, 'db'>, row: FlowRow) {
  const def = await loadDefinition(ctx.db, row.id, row.version);
  return { ...presentFlow(row, def), stats: await flowStats(ctx.db, row.id, def) };
}

/** The flow-level sender a request gives: `from` may be `Name <address>`, which also sets the name. */
function flowSender(input: FlowInput, current: { from: string | null; from_name: string | null }) {
  let { from, from_name } = current;
  if (input.from !== undefined) {
    if (input.from !== null && typeof input.from !== 'string')
      throw new ValidationError('`from` must be an address string');
    const mailbox = input.from === null ? null : parseMailbox(input.from, 'from');
    from = mailbox?.address ?? null;
    if (mailbox?.name && input.from_name === undefined) from_name = mailbox.name;
  }
  if (input.from_name !== undefined) from_name = input.from_name;
  return { from, from_name };
}

function checkName(name: unknown): string {
  if (typeof name !== 'string' || name.trim() === '' || name.length > 200)
    throw new ValidationError('`name` must be 1 to 200 characters');
  return name.trim();
}

/**
 * GET /flows: the project's flows, newest first, paginated. Each row's `stats` holds only the
 * enrollment counts (one query for the page): the per-step part reads every enrollment's history,
 * which GET /flows/{id} does for one.
 */
export async function listFlows(ctx: Pick<DomainContext, 'db'>, projectId: string, page: Page) {
  const { rows, ...found } = await readPage(
    ctx.db.selectFrom('flows').where('project_id', '=', projectId),
    (base) =>
      base
        .innerJoin('flow_versions as v', (j) =>
          j.onRef('v.flow_id', '=', 'flows.id').onRef('v.version', '=', 'flows.version'),
        )
        .selectAll('flows')
        .select('v.definition')
        .orderBy('flows.created_at', 'desc')
        .orderBy('flows.id', 'desc'),
    page,
  );
  const counts = await enrollmentCounts(
    ctx.db,
    rows.map((r) => r.id),
  );
  const data = rows.map(({ definition, ...row }) => ({
    ...presentFlow(row, definition as FlowDefinition),
    stats: counts.get(row.id) ?? emptyCounts(),
  }));
  return { data, ...found };
}

/** GET /flows/{id}: the current version, with its stats. */
export async function getFlow(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  return flowView(ctx, await findFlow(ctx, projectId, id));
}

/** What activating a flow needs besides its definition: the plan's `automations` (402), a sendable account (400). */
export function checkActivation(facts: ProjectFacts, name: string) {
  requireFeature(facts.plan, 'automations');
  checkStream(facts, 'automation', `Flow "${name}" cannot be activated`);
}

/** How a draft or paused flow is activated, for the errors of what needs an active flow ('' otherwise). */
export function activationHint(flow: Pick<FlowRow, 'id' | 'status'>): string {
  if (flow.status !== 'draft' && flow.status !== 'paused') return '';
  const how = `; activate it with POST /v1/flows/${flow.id}/activate`;
  // a draft made by POST /v1/flows could have been active from the start
  return flow.status === 'draft' ? `${how} (or create flows with "status": "active")` : how;
}

/**
 * POST /flows: a flow at version 1, checked as a whole (definition, the role its webhook steps need,
 * then what it names in the project): a draft, or with `"status": "active"` running at once, after
 * every check activation makes (nothing is created when one fails).
 */
export async function createFlow(
  ctx: DomainContext,
  facts: ProjectFacts,
  input: FlowInput,
  actor: FlowActor,
) {
  const name = checkName(input.name);
  const status = input.status ?? 'draft';
  if (status !== 'draft' && status !== 'active')
    throw new ValidationError(
      '`status` must be "draft" (the default) or "active" (the flow runs at once); a flow is paused or archived afterwards with POST /v1/flows/{id}/pause or /archive',
    );
  const sender = flowSender(input, { from: null, from_name: null });
  const parsed = parseDefinition({ ...input, ...sender });
  requireWebhookRights(parsed, actor);
  const def = await checkReferences(ctx, facts, parsed);
  const id = randomUUID();
  if (status === 'active') {
    checkActivation(facts, name);
    // no override here: a flow whose gate fails is created as a draft and activated with one
    await passFlowGate(ctx, facts, def, { id, name });
  }
  const row = await ctx.db.transaction().execute(async (tx) => {
    const flow = await tx
      .insertInto('flows')
      .values({
        id,
        project_id: facts.id,
        name,
        status,
        from_address: sender.from,
        from_name: sender.from_name,
        webhook_owner_id: webhookOwner(def, actor),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await tx
      .insertInto('flow_versions')
      .values({ flow_id: id, version: 1, definition: JSON.stringify(def) })
      .execute();
    return flow;
  });
  return flowView(ctx, row);
}

const readOnly = (row: Pick<FlowRow, 'name'>) =>
  new ConflictError(`Flow "${row.name}" is archived: it can no longer be changed`);

/**
 * The definition a PATCH asks for: the parts it gives replace the current ones. A new flow-level
 * sender also replaces it in the send steps that had taken it (those whose sender was the flow's,
 * or the shared default when the flow had none); steps given whole take it as any new step does.
 */
function patchedInput(input: FlowInput, current: FlowDefinition, old: FlowRow, ctx: DomainContext) {
  let steps: unknown[] = input.steps ?? current.steps;
  if (input.steps === undefined && (input.from !== undefined || input.from_name !== undefined)) {
    const oldFrom = old.from_address ?? sharedDefaultFrom(ctx);
    steps = current.steps.map((s) =>
      s.type !== 'send'
        ? s
        : {
            ...s,
            from: input.from !== undefined && s.from === oldFrom ? null : s.from,
            from_name: input.from_name !== undefined && s.from_name === old.from_name ? null : s.from_name,
          },
    );
  }
  return {
    trigger: input.trigger ?? current.trigger,
    steps,
    reentry: input.reentry === undefined ? current.reentry : input.reentry,
    goal: input.goal === undefined ? current.goal : input.goal,
  };
}

/**
 * PATCH /flows/{id}. A draft or paused flow that no enrollment has used at its current version is
 * rewritten in place; an active flow, or one with enrollments on its current version, gets version
 * N+1 (new enrollments start on it, running ones finish on theirs). Archived flows: 409. A flow
 * with webhook steps is edited only with the role they need (and its editor answers for them).
 */
export async function updateFlow(
  ctx: DomainContext,
  facts: ProjectFacts,
  id: string,
  input: FlowInput,
  actor: FlowActor,
) {
  const current = await findFlow(ctx, facts.id, id);
  if (current.status === 'archived') throw readOnly(current);
  const name = input.name === undefined ? current.name : checkName(input.name);
  const sender = flowSender(input, { from: current.from_address, from_name: current.from_name });
  const currentDef = await loadDefinition(ctx.db, current.id, current.version);
  const parsed = parseDefinition({ ...patchedInput(input, currentDef, current, ctx), ...sender });
  requireWebhookRights(parsed, actor);
  const def = await checkReferences(ctx, facts, parsed);
  // jsonb keeps its own key order: compare as values
  const changed = !isDeepStrictEqual(JSON.parse(JSON.stringify(def)), currentDef);
  const row = await ctx.db.transaction().execute(async (tx) => {
    const locked = await tx
      .selectFrom('flows')
      .selectAll()
      .where('id', '=', current.id)
      .forUpdate()
      .executeTakeFirst();
    if (!locked) throw new ConflictError(`Flow "${current.name}" was deleted meanwhile`);
    if (locked.status === 'archived') throw readOnly(locked);
    if (locked.version !== current.version)
      throw new ConflictError(`Flow "${current.name}" was edited meanwhile: read it again and retry`);
    let version = locked.version;
    if (changed) version = await writeVersion(tx, locked, def);
    return tx
      .updateTable('flows')
      .set({
        name,
        from_address: sender.from,
        from_name: sender.from_name,
        version,
        webhook_owner_id: webhookOwner(def, actor),
        updated_at: new Date(),
      })
      .where('id', '=', locked.id)
      .returningAll()
      .executeTakeFirstOrThrow();
  });
  return flowView(ctx, row);
}

/** Writes the new definition: in place while nothing runs on the current version, else as N+1. */
async function writeVersion(tx: Db, flow: FlowRow, def: FlowDefinition): Promise<number> {
  const used = await tx
    .selectFrom('flow_enrollments')
    .select('id')
    .where('flow_id', '=', flow.id)
    .where('version', '=', flow.version)
    .limit(1)
    .executeTakeFirst();
  const definition = JSON.stringify(def);
  if (flow.status !== 'active' && !used) {
    await tx
      .updateTable('flow_versions')
      .set({ definition })
      .where('flow_id', '=', flow.id)
      .where('version', '=', flow.version)
      .execute();
    return flow.version;
  }
  await tx
    .insertInto('flow_versions')
    .values({ flow_id: flow.id, version: flow.version + 1, definition })
    .execute();
  return flow.version + 1;
}

/** DELETE /flows/{id}: refused (409) while active; its versions and enrollments go with it. */
export async function deleteFlow(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  const current = await findFlow(ctx, projectId, id);
  if (!(await deleteUnlessBusy(ctx.db, 'flows', current.id, 'active'))) {
    const now = await findFlow(ctx, projectId, id);
    throw new ConflictError(`Flow "${now.name}" is active: pause it before deleting it`);
  }
}
