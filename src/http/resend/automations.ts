import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type Selectable, sql } from 'kysely';
import { Type } from 'typebox';
import type { FlowEnrollmentsTable, FlowsTable } from '../../db/schema.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { ValidationError } from '../../domain/core/errors.ts';
import { keysetPage } from '../../domain/core/keyset.ts';
import type { FlowDefinition } from '../../domain/flows/definition.ts';
import { getEnrollment } from '../../domain/flows/enrollments.ts';
import { activateFlow, pauseFlow } from '../../domain/flows/flow-status.ts';
import { createFlow, deleteFlow, findFlow, getFlow, updateFlow } from '../../domain/flows/flows.ts';
import type { FlowActor } from '../../domain/flows/webhook-rights.ts';
import { authOf, projectFactsOf, projectOf } from '../auth.ts';
import { typed } from '../schemas.ts';
import { flowParts } from './automation-input.ts';
import { automationGraph } from './automation-steps.ts';
import { CursorQuery, IdParams, listOf } from './schemas.ts';
import {
  automationStatus,
  ENROLLMENT_STATUSES,
  inResendFields,
  RUN_STATUS,
  RUN_STEP_STATUS,
  STEP_TYPE,
} from './vocabulary.ts';

/**
 * Automations and their runs (issue 51) over Posthorn's flows and enrollments
 * (domain/flows): an active flow is `enabled`, any other `disabled`; `stop` pauses it; a run is an
 * enrollment, its steps the enrollment's history. An automation's graph is a flow's definition
 * (automation-steps.ts shows one, automation-input.ts reads one); a copy starts disabled.
 */

const project = { auth: 'project' as const };
const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

const summary = (f: {
  id: string;
  name: string;
  status: string;
  created_at: string | Date;
  updated_at: string | Date;
}) => ({
  id: f.id,
  name: f.name,
  status: automationStatus(f.status),
  created_at: iso(f.created_at),
  updated_at: iso(f.updated_at),
});

type Enrollment = Awaited<ReturnType<typeof getEnrollment>>;

// a run starts when the contact is enrolled
const runSummary = (e: Pick<Enrollment, 'id' | 'status' | 'created_at' | 'finished_at'>) => ({
  id: e.id,
  status: RUN_STATUS[e.status] ?? 'running',
  started_at: e.created_at,
  ...inResendFields('automation_run', { finished_at: e.finished_at }),
  created_at: e.created_at,
});

const runStep = (h: Enrollment['history'][number]) => ({
  key: h.step_id,
  type: STEP_TYPE[h.type] ?? h.type,
  status: RUN_STEP_STATUS[h.outcome] ?? 'completed',
  output: { outcome: h.outcome, ...(h.email_id ? { email_id: h.email_id } : {}) },
  error: h.outcome === 'failed' ? { message: 'the step failed' } : null,
  started_at: h.at,
  completed_at: h.at,
  created_at: h.at,
});

/** `status` of automations.list: enabled (active flows) or disabled (every other). */
function flowScope(projectId: string, status: unknown) {
  if (status === undefined) return sql<boolean>`project_id = ${projectId}`;
  if (status === 'enabled') return sql<boolean>`project_id = ${projectId} and status = 'active'`;
  if (status === 'disabled') return sql<boolean>`project_id = ${projectId} and status <> 'active'`;
  throw new ValidationError('`status` must be enabled or disabled');
}

/** `status` of runs.list: one of Resend's run statuses, or several separated by commas. */
function enrollmentStatuses(status: unknown): string[] | null {
  if (status === undefined) return null;
  const given = typeof status === 'string' ? status.split(',') : [];
  const bad = given.length === 0 || given.some((s) => !ENROLLMENT_STATUSES[s]);
  if (bad)
    throw new ValidationError(
      '`status` must be running, completed, failed or cancelled (or several, with commas)',
    );
  return given.flatMap((s) => ENROLLMENT_STATUSES[s]);
}

/** A page of automations or runs, with Resend's `status` filter (checked in the handler, which names the values). */
const RunsQuery = Type.Object({
  ...CursorQuery.properties,
  status: Type.Optional(Type.String({ maxLength: 200 })),
});

export async function resendAutomationRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  app.get(
    '/automations',
    { config: project, schema: { hide: true, querystring: RunsQuery } },
    async (request) => {
      const query = request.query;
      const page = await keysetPage<Selectable<FlowsTable>>(
        ctx.db,
        'flows',
        flowScope(projectOf(request), query.status),
        query,
      );
      return listOf(page.rows.map(summary), page.has_more);
    },
  );
  app.get(
    '/automations/:id',
    { config: project, schema: { hide: true, params: IdParams } },
    async (request) => {
      const flow = await getFlow(ctx, projectOf(request), request.params.id);
      const def = {
        trigger: flow.trigger,
        steps: flow.steps,
        reentry: flow.reentry,
        goal: flow.goal,
      } as FlowDefinition;
      return { object: 'automation', ...summary(flow), ...automationGraph(def) };
    },
  );
  // Resend removes an enabled automation too: the flow is paused, then deleted
  app.delete(
    '/automations/:id',
    { config: project, schema: { hide: true, params: IdParams } },
    async (request) => {
      const flow = await findFlow(ctx, projectOf(request), request.params.id);
      if (flow.status === 'active') await pauseFlow(ctx, projectOf(request), flow.id);
      await deleteFlow(ctx, projectOf(request), flow.id);
      return { object: 'automation', id: flow.id, deleted: true };
    },
  );
  app.post(
    '/automations/:id/stop',
    { config: project, schema: { hide: true, params: IdParams } },
    async (request) => {
      const flow = await findFlow(ctx, projectOf(request), request.params.id);
      if (flow.status === 'active') await pauseFlow(ctx, projectOf(request), flow.id);
      return { object: 'automation', id: flow.id, status: 'disabled' };
    },
  );
  resendAutomationWrites(app, ctx);
  resendRunRoutes(app, ctx);
}

function actorOf(request: FastifyRequest): FlowActor {
  const auth = authOf(request);
  return { accountId: auth.accountId, role: auth.role };
}

/** Enables (activates) or disables (pauses) a flow, as Resend's `status`. */
async function setStatus(ctx: DomainContext, request: FastifyRequest, id: string, status: unknown) {
  if (status === undefined) return;
  if (status !== 'enabled' && status !== 'disabled')
    throw new ValidationError('`status` must be enabled or disabled');
  const facts = await projectFactsOf(request, ctx);
  const flow = await findFlow(ctx, facts.id, id);
  if (status === 'disabled' && flow.status === 'active') await pauseFlow(ctx, facts.id, id);
  if (status === 'enabled' && flow.status !== 'active') {
    const auth = authOf(request);
    await activateFlow(ctx, facts, id, actorOf(request), {
      who: auth.key ? `key ${auth.key.id}` : `account ${auth.accountId}`,
      admin: auth.session ? auth.role === 'admin' || auth.role === 'owner' : true,
    });
  }
}

const Graph = {
  name: Type.Optional(Type.String()),
  status: Type.Optional(Type.String()),
  steps: Type.Optional(Type.Array(Type.Unknown())),
  connections: Type.Optional(Type.Array(Type.Unknown())),
};

function resendAutomationWrites(app: ReturnType<typeof typed>, ctx: DomainContext) {
  app.post(
    '/automations',
    {
      config: project,
      schema: {
        hide: true,
        body: Type.Object(
          {
            ...Graph,
            name: Type.String(),
            steps: Type.Array(Type.Unknown()),
            connections: Type.Array(Type.Unknown()),
          },
          { additionalProperties: true },
        ),
      },
    },
    async (request, reply) => {
      const { name, status, steps, connections } = request.body;
      if (status !== undefined && status !== 'enabled' && status !== 'disabled')
        throw new ValidationError('`status` must be enabled or disabled');
      const created = await createFlow(
        ctx,
        await projectFactsOf(request, ctx),
        { name, status: status === 'enabled' ? 'active' : 'draft', ...flowParts(steps, connections) },
        actorOf(request),
      );
      return reply.code(201).send({ object: 'automation', id: created.id });
    },
  );
  app.patch(
    '/automations/:id',
    {
      config: project,
      schema: { hide: true, params: IdParams, body: Type.Object(Graph, { additionalProperties: true }) },
    },
    async (request) => {
      const { name, status, steps, connections } = request.body;
      if (status !== undefined && status !== 'enabled' && status !== 'disabled')
        throw new ValidationError('`status` must be enabled or disabled');
      const graph = steps !== undefined || connections !== undefined ? flowParts(steps, connections) : {};
      const flow = await findFlow(ctx, projectOf(request), request.params.id);
      if (name !== undefined || steps !== undefined)
        await updateFlow(
          ctx,
          await projectFactsOf(request, ctx),
          flow.id,
          { ...(name !== undefined ? { name } : {}), ...graph },
          actorOf(request),
        );
      await setStatus(ctx, request, flow.id, status);
      return { object: 'automation', id: flow.id };
    },
  );
  app.post(
    '/automations/:id/duplicate',
    { config: project, schema: { hide: true, params: IdParams } },
    async (request, reply) => {
      const flow = await getFlow(ctx, projectOf(request), request.params.id);
      const copy = await createFlow(
        ctx,
        await projectFactsOf(request, ctx),
        {
          name: `${flow.name} (copy)`.slice(0, 200),
          trigger: flow.trigger,
          steps: flow.steps,
          reentry: flow.reentry,
          goal: flow.goal,
          from: flow.from,
          from_name: flow.from_name,
        },
        actorOf(request),
      );
      return reply.code(201).send({ object: 'automation', id: copy.id });
    },
  );
}

function resendRunRoutes(app: ReturnType<typeof typed>, ctx: DomainContext) {
  app.get(
    '/automations/:id/runs',
    { config: project, schema: { hide: true, params: IdParams, querystring: RunsQuery } },
    async (request) => {
      const flow = await findFlow(ctx, projectOf(request), request.params.id);
      const query = request.query;
      const statuses = enrollmentStatuses(query.status);
      const scope = statuses
        ? sql<boolean>`flow_id = ${flow.id} and status = any(${statuses}::text[])`
        : sql<boolean>`flow_id = ${flow.id}`;
      const page = await keysetPage<Selectable<FlowEnrollmentsTable>>(
        ctx.db,
        'flow_enrollments',
        scope,
        query,
      );
      return listOf(
        page.rows.map((e) =>
          runSummary({ ...e, created_at: iso(e.created_at) as string, finished_at: iso(e.finished_at) }),
        ),
        page.has_more,
      );
    },
  );
  app.get(
    '/automations/:id/runs/:run_id',
    {
      config: project,
      schema: { hide: true, params: Type.Object({ id: Type.String(), run_id: Type.String() }) },
    },
    async (request) => {
      const run = await getEnrollment(ctx, projectOf(request), request.params.id, request.params.run_id);
      return { object: 'automation_run', ...runSummary(run), steps: run.history.map(runStep) };
    },
  );
}
