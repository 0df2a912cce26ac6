import { queryOptions } from '@tanstack/react-query';
import { v1 } from './client.ts';
import type { Page } from './types.ts';

/** Flows as GET /v1/flows returns them: the current version's definition, normalised, and counts. */
export type FlowStatus = 'draft' | 'active' | 'paused' | 'archived';

export type Condition = { all?: object[]; any?: object[] };

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

export type StepType = FlowStep['type'];

export interface FlowStepStats {
  id: string;
  type: string;
  entered: number;
  sent: number;
  opened: number;
  clicked: number;
  exited: number;
}

export interface FlowStats {
  entered: number;
  active: number;
  completed: number;
  exited: number;
  failed: number;
  cancelled: number;
  converted: number;
  sent?: number;
  opened?: number;
  clicked?: number;
  steps?: FlowStepStats[];
}

export interface Flow {
  id: string;
  name: string;
  status: FlowStatus;
  version: number;
  trigger: FlowTrigger;
  steps: FlowStep[];
  reentry: { policy: 'once' | 'always' | 'cooldown'; cooldown_seconds?: number };
  goal: Condition | null;
  from: string | null;
  from_name: string | null;
  stats: FlowStats;
  created_at: string;
  updated_at: string;
}

export type FlowInput = Partial<
  Pick<Flow, 'name' | 'trigger' | 'steps' | 'reentry' | 'goal' | 'from' | 'from_name'>
>;

export type EnrollmentStatus = 'active' | 'completed' | 'exited' | 'failed' | 'cancelled';

export interface Enrollment {
  id: string;
  flow_id: string;
  version: number;
  contact: { id: string; email: string };
  status: EnrollmentStatus;
  current_step: string | null;
  wake_at: string | null;
  exit_reason: string | null;
  converted_at: string | null;
  history: { step_id: string | null; type: string; at: string; outcome: string; email_id?: string }[];
  created_at: string;
  finished_at: string | null;
}

export const FLOWS_PER_PAGE = 25;
export const ENROLLMENTS_PER_PAGE = 25;
const enc = encodeURIComponent;

export const flowsQuery = (projectId: string, page: number) =>
  queryOptions({
    queryKey: ['project', projectId, 'flows', page],
    queryFn: () =>
      v1<Page<Flow>>('GET', projectId, '/flows', {
        query: { limit: FLOWS_PER_PAGE, offset: (page - 1) * FLOWS_PER_PAGE },
      }),
  });

/** One flow with its per-step counts, refreshed every 5 s while it runs. */
export const flowQuery = (projectId: string, id: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'flow', id],
    queryFn: () => v1<Flow>('GET', projectId, `/flows/${enc(id)}`),
    refetchInterval: (query) => (query.state.data?.status === 'active' ? 5_000 : false),
  });

export interface EnrollmentFilter {
  status: EnrollmentStatus | '';
  search: string;
  page: number;
}

export const enrollmentsQuery = (projectId: string, flowId: string, f: EnrollmentFilter) =>
  queryOptions({
    queryKey: ['project', projectId, 'flow', flowId, 'enrollments', f],
    queryFn: () =>
      v1<Page<Enrollment>>('GET', projectId, `/flows/${enc(flowId)}/enrollments`, {
        query: {
          status: f.status || undefined,
          search: f.search.trim() || undefined,
          limit: ENROLLMENTS_PER_PAGE,
          offset: (f.page - 1) * ENROLLMENTS_PER_PAGE,
        },
      }),
    refetchInterval: 5_000,
  });

export const flows = {
  create: (projectId: string, body: FlowInput & { name: string; trigger: FlowTrigger; steps: FlowStep[] }) =>
    v1<Flow>('POST', projectId, '/flows', { body }),
  update: (projectId: string, id: string, body: FlowInput) =>
    v1<Flow>('PATCH', projectId, `/flows/${enc(id)}`, { body }),
  remove: (projectId: string, id: string) => v1<null>('DELETE', projectId, `/flows/${enc(id)}`),
  action: (projectId: string, id: string, action: 'activate' | 'pause' | 'archive') =>
    v1<Flow>('POST', projectId, `/flows/${enc(id)}/${action}`),
  cancelEnrollment: (projectId: string, flowId: string, id: string) =>
    v1<null>('DELETE', projectId, `/flows/${enc(flowId)}/enrollments/${enc(id)}`),
};
