import { api, projectQuery, type Schemas } from './client.ts';
import { pageOf } from './endpoints.ts';

/**
 * Flows as GET /v1/flows returns them. The document describes a trigger and a step loosely (a
 * `type` and its fields: `FlowTrigger`, `FlowStep`); the builder knows each type's own fields, as
 * the API reference lists them, and these types say them. Each is checked to be a `FlowTrigger` or
 * `FlowStep` of the document, so what the builder sends is what the API takes.
 */
export type FlowStatus = Schemas['Flow']['status'];

export type Condition = Schemas['FlowCondition'];

export type EventWhere = { property: string; op: string; value?: unknown };

export type FlowTrigger =
  | { type: 'contact_created' }
  | { type: 'contact_updated'; condition?: Condition | null }
  | { type: 'event'; event: string; where?: EventWhere[] }
  | { type: 'list_joined'; list_id: string }
  | { type: 'segment_entered'; segment_id: string }
  | { type: 'manual' };

export type FlowStep =
  | {
      id: string;
      type: 'send';
      subject: string | null;
      html: string | null;
      template_id: string | null;
      template_version?: number | null;
      from?: string | null;
      from_name?: string | null;
      /** Only the topic's subscribers get it (the others skip the message). */
      topic_id?: string | null;
      next: string | null;
    }
  | {
      id: string;
      type: 'wait';
      duration_seconds?: number;
      until?: string;
      until_property?: string;
      window?: { from_hour: number; to_hour: number; days?: number[] };
      next: string | null;
    }
  | {
      id: string;
      type: 'wait_for_event';
      event: string;
      where?: EventWhere[];
      timeout_seconds: number;
      next: string | null;
      timeout_next: string | null;
    }
  | {
      id: string;
      type: 'branch';
      branches: { condition: Condition; next: string | null }[];
      default_next: string | null;
    }
  | {
      id: string;
      type: 'update_contact';
      set_properties?: Record<string, unknown> | null;
      join_list_id?: string | null;
      leave_list_id?: string | null;
      next: string | null;
    }
  | { id: string; type: 'webhook'; url: string; next: string | null }
  | { id: string; type: 'exit' };

// the builder's shapes are the document's: a change to FlowTrigger or FlowStep there fails here
const triggerFits = (trigger: FlowTrigger): Schemas['FlowTrigger'] => trigger;
const stepFits = (step: FlowStep): Schemas['FlowStep'] => step;
void triggerFits;
void stepFits;

export type StepType = FlowStep['type'];
export type FlowStepStats = Schemas['FlowStepStats'];

/** A flow with its trigger and steps in the builder's terms. */
export type Flow = Omit<Schemas['Flow'], 'trigger' | 'steps'> & { trigger: FlowTrigger; steps: FlowStep[] };

/** The API's flow in the builder's terms (see above: the document types a step by its `type` only). */
const asFlow = (flow: Schemas['Flow']) => flow as Flow;

export type FlowInput = Partial<
  Pick<Flow, 'name' | 'trigger' | 'steps' | 'reentry' | 'goal' | 'from' | 'from_name'>
>;

export type Enrollment = Schemas['FlowEnrollment'];
export type EnrollmentStatus = Enrollment['status'];

export const FLOWS_PER_PAGE = 25;
export const ENROLLMENTS_PER_PAGE = 25;

export const flowsQuery = (project: string, page: number) =>
  projectQuery(project, ['flows', page], async () => {
    const answer = await api.get('/v1/flows', { project, query: pageOf(page, FLOWS_PER_PAGE) });
    return { ...answer, data: answer.data.map(asFlow) };
  });

/** One flow with its per-step counts, refreshed every 5 s while it runs. */
export const flowQuery = (project: string, id: string) =>
  projectQuery(
    project,
    ['flow', id],
    async () => asFlow(await api.get('/v1/flows/{id}', { project, path: { id } })),
    { refetchInterval: (query) => (query.state.data?.status === 'active' ? 5_000 : false) },
  );

export interface EnrollmentFilter {
  status: EnrollmentStatus | '';
  search: string;
  page: number;
}

/** The enrollments a flow's page opens with: any status, newest first. */
export const FIRST_ENROLLMENTS: EnrollmentFilter = { status: '', search: '', page: 1 };

export const enrollmentsQuery = (project: string, flowId: string, f: EnrollmentFilter) =>
  projectQuery(
    project,
    ['flow', flowId, 'enrollments', f],
    () =>
      api.get('/v1/flows/{id}/enrollments', {
        project,
        path: { id: flowId },
        query: {
          status: f.status || undefined,
          search: f.search.trim() || undefined,
          ...pageOf(f.page, ENROLLMENTS_PER_PAGE),
        },
      }),
    { refetchInterval: 5_000 },
  );

export const flows = {
  create: async (
    project: string,
    body: FlowInput & { name: string; trigger: FlowTrigger; steps: FlowStep[] },
  ) => asFlow(await api.post('/v1/flows', { project, body })),
  update: async (project: string, id: string, body: FlowInput) =>
    asFlow(await api.patch('/v1/flows/{id}', { project, path: { id }, body })),
  remove: (project: string, id: string) => api.delete('/v1/flows/{id}', { project, path: { id } }),
  activate: async (project: string, id: string, reason?: string) =>
    asFlow(
      await api.post('/v1/flows/{id}/activate', { project, path: { id }, body: reason ? { reason } : {} }),
    ),
  pause: async (project: string, id: string) =>
    asFlow(await api.post('/v1/flows/{id}/pause', { project, path: { id } })),
  archive: async (project: string, id: string) =>
    asFlow(await api.post('/v1/flows/{id}/archive', { project, path: { id } })),
};
