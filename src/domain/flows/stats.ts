import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { humanEngagement } from '../campaigns/stats.ts';
import type { FlowDefinition } from './definition.ts';
import { TOPIC_SKIP } from './sends.ts';

/**
 * Flow stats, computed set-based when asked: nothing is counted ahead, the numbers are what the
 * rows say now. Enrollments give the totals (by status, conversions) and, through their history,
 * how many passed each step; a flow's messages are reached through `flow_step_sends` (one row per
 * enrollment and send step, the engine's guard; emails has no flow index: the accept path must not
 * pay for one), and engagement through the partial index `email_events_engagement`, as campaign
 * stats read it (opens and clicks by people only).
 */

/** How many enrollments are in each state; `entered` counts them all. */
export interface EnrollmentCounts {
  entered: number;
  active: number;
  completed: number;
  exited: number;
  failed: number;
  cancelled: number;
  converted: number;
}

export interface StepStats {
  id: string;
  type: string;
  /** Enrollments that reached the step (passed it or are at it). */
  entered: number;
  /** Send steps: messages the next hop accepted. */
  sent: number;
  /** Messages opened / clicked at least once by a person. */
  opened: number;
  clicked: number;
  /** Enrollments that left the flow at this step (exit step, goal, unsubscribe...). */
  exited: number;
  /** Send steps for a topic: times an enrollment passed without the message, not subscribed to it. */
  skipped: number;
}

export type FlowStats = EnrollmentCounts & {
  sent: number;
  opened: number;
  clicked: number;
  steps: StepStats[];
};

const EMPTY: EnrollmentCounts = {
  entered: 0,
  active: 0,
  completed: 0,
  exited: 0,
  failed: 0,
  cancelled: 0,
  converted: 0,
};

const COUNTS = sql`count(*)::int as entered,
  count(*) filter (where status = 'active')::int as active,
  count(*) filter (where status = 'completed')::int as completed,
  count(*) filter (where status = 'exited')::int as exited,
  count(*) filter (where status = 'failed')::int as failed,
  count(*) filter (where status = 'cancelled')::int as cancelled,
  count(converted_at)::int as converted`;

/** The enrollment counts of several flows in one query (list pages). */
export async function enrollmentCounts(db: Db, flowIds: string[]): Promise<Map<string, EnrollmentCounts>> {
  const out = new Map<string, EnrollmentCounts>();
  if (flowIds.length === 0) return out;
  const { rows } = await sql<EnrollmentCounts & { flow_id: string }>`
    select flow_id, ${COUNTS} from flow_enrollments
     where flow_id = any(${flowIds}::uuid[]) group by flow_id`.execute(db);
  for (const { flow_id, ...counts } of rows) out.set(flow_id, counts);
  return out;
}

interface StepRow {
  step_id: string;
  entered: number;
  exited: number;
  skipped: number;
}

/**
 * Per step: enrollments that reached it (a history entry for it, or at it now), those that left
 * the flow there (exited while at it, or with it as their last history entry), and the times a send
 * for a topic was passed without its message.
 */
async function stepPassage(db: Db, flowId: string): Promise<StepRow[]> {
  const { rows } = await sql<StepRow>`
    with en as (
      select id, status, step_id, history from flow_enrollments where flow_id = ${flowId}
    ), entries as (
      select en.id, h ->> 'step_id' as step_id, h ->> 'outcome' as outcome
        from en cross join lateral jsonb_array_elements(en.history) h
    ), reached as (
      select id, step_id from entries
      union
      select en.id, en.step_id from en where en.step_id is not null
    ), passed as (
      select step_id, count(*)::int as entered from reached where step_id is not null group by step_id
    ), skipped as (
      select step_id, count(*)::int as skipped from entries where outcome = ${TOPIC_SKIP} group by step_id
    ), left_at as (
      select coalesce(step_id, history -> -1 ->> 'step_id') as step_id, count(*)::int as exited
        from en where status = 'exited' group by 1
    )
    select coalesce(p.step_id, l.step_id) as step_id, coalesce(p.entered, 0) as entered,
           coalesce(l.exited, 0) as exited, coalesce(k.skipped, 0) as skipped
      from passed p full join left_at l on l.step_id = p.step_id
      left join skipped k on k.step_id = p.step_id`.execute(db);
  return rows;
}

interface SendRow {
  step_id: string;
  sent: number;
  opened: number;
  clicked: number;
}

/** Per send step: messages accepted by the next hop, and those a person opened or clicked. */
async function stepSends(db: Db, flowId: string): Promise<SendRow[]> {
  const { rows } = await sql<SendRow>`
    with s as (
      select ss.step_id, ss.email_id from flow_step_sends ss
        join flow_enrollments fe on fe.id = ss.enrollment_id
       where fe.flow_id = ${flowId}
    ), delivery as (
      select s.step_id, count(e.sent_at)::int as sent from s left join emails e on e.id = s.email_id
       group by s.step_id
    ), engagement as (
      select s.step_id,
             count(distinct ev.email_id) filter (where ev.type = 'opened')::int as opened,
             count(distinct ev.email_id) filter (where ev.type = 'clicked')::int as clicked
        from s join email_events ev on ev.email_id = s.email_id and ${humanEngagement('ev')}
       group by s.step_id
    )
    select d.step_id, d.sent, coalesce(g.opened, 0) as opened, coalesce(g.clicked, 0) as clicked
      from delivery d left join engagement g on g.step_id = d.step_id`.execute(db);
  return rows;
}

/**
 * One flow's stats, totals and per step of `def` (its current version: a step of an older version
 * that this one lacks counts in the totals only).
 */
export async function flowStats(db: Db, flowId: string, def: FlowDefinition): Promise<FlowStats> {
  const [counts, passage, sends] = await Promise.all([
    enrollmentCounts(db, [flowId]),
    stepPassage(db, flowId),
    stepSends(db, flowId),
  ]);
  const byStep = new Map(passage.map((r) => [r.step_id, r]));
  const sentBy = new Map(sends.map((r) => [r.step_id, r]));
  const total = (key: 'sent' | 'opened' | 'clicked') => sends.reduce((n, r) => n + r[key], 0);
  return {
    ...(counts.get(flowId) ?? EMPTY),
    sent: total('sent'),
    opened: total('opened'),
    clicked: total('clicked'),
    steps: def.steps.map((s) => ({
      id: s.id,
      type: s.type,
      entered: byStep.get(s.id)?.entered ?? 0,
      sent: sentBy.get(s.id)?.sent ?? 0,
      opened: sentBy.get(s.id)?.opened ?? 0,
      clicked: sentBy.get(s.id)?.clicked ?? 0,
      exited: byStep.get(s.id)?.exited ?? 0,
      skipped: byStep.get(s.id)?.skipped ?? 0,
    })),
  };
}

/** The counts list rows carry (no per-step part): one query for the page. */
export function emptyCounts(): EnrollmentCounts {
  return { ...EMPTY };
}
