import type { FastifyInstance } from 'fastify';
import { type Selectable, sql } from 'kysely';
import { Type } from 'typebox';
import type { FlowEnrollmentsTable, FlowsTable } from '../../db/schema.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { ValidationError } from '../../domain/core/errors.ts';
import { keysetPage } from '../../domain/core/keyset.ts';
import type { FlowDefinition } from '../../domain/flows/definition.ts';
import { getEnrollment } from '../../domain/flows/enrollments.ts';
import { pauseFlow } from '../../domain/flows/flow-status.ts';
import { deleteFlow, findFlow, getFlow } from '../../domain/flows/flows.ts';
import { projectOf } from '../auth.ts';
import { typed } from '../schemas.ts';
import { automationGraph } from './automation-steps.ts';
import { CursorQuery, IdParams, listOf } from './schemas.ts';
import {
  automationStatus,
  ENROLLMENT_STATUSES,
  RUN_STATUS,
  RUN_STEP_STATUS,
  STEP_TYPE,
} from './vocabulary.ts';

/**
 * Automations and their runs (issue 51) over Posthorn's flows and enrollments
 * (domain/flows): an active flow is `enabled`, any other `disabled`; `stop` pauses it; a run is an
 * enrollment, its steps the enrollment's history. `create`, `update` and `duplicate` are in
 * automation-writes.ts.
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

const runSummary = (e: Pick<Enrollment, 'id' | 'status' | 'created_at' | 'finished_at'>) => ({
  id: e.id,
  status: RUN_STATUS[e.status] ?? 'running',
  started_at: e.created_at,
  completed_at: e.finished_at,
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

export async function resendAutomationRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  app.get(
    '/automations',
    { config: project, schema: { hide: true, querystring: CursorQuery } },
    async (request) => {
      const query = request.query as typeof request.query & { status?: unknown };
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
  resendRunRoutes(app, ctx);
}

function resendRunRoutes(app: ReturnType<typeof typed>, ctx: DomainContext) {
  app.get(
    '/automations/:id/runs',
    { config: project, schema: { hide: true, params: IdParams, querystring: CursorQuery } },
    async (request) => {
      const flow = await findFlow(ctx, projectOf(request), request.params.id);
      const query = request.query as typeof request.query & { status?: unknown };
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
