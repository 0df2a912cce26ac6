import { sql } from 'kysely';
import type { Db, Tx } from '../../db/database.ts';
import { BULK_PRIORITY } from '../../db/enqueue.ts';
import type { DomainContext } from '../core/context.ts';
import { reasonsBlocking } from '../emails/suppressions.ts';
import { applyWrite } from '../emails/write.ts';
import { pickBranches } from './conditions.ts';
import { applyContactUpdates } from './contact-updates.ts';
import type { FlowDefinition, SendStep, Step } from './definition.ts';
import { type PlannedSend, SendPlan } from './sends.ts';
import {
  type BatchStep,
  type DueEnrollment,
  type PlannedWebhook,
  record,
  startWalk,
  type Walker,
  walkLocal,
} from './steps.ts';
import { queueWebhooks } from './webhook-step.ts';

/**
 * The flow engine: advances due enrollments (`status = 'active' and wake_at <= now()`, of active
 * flows) in batches, each batch ONE transaction: its rows taken `for update skip locked` (so
 * several workers share the work and a cancel or goal waits for the batch), walked in Node through
 * their version's steps (steps.ts), the steps that need the database resolved set-based for the
 * whole batch (branches, contact updates, sends), then written back set-based: the messages
 * through the one durable write of every send, guarded by `flow_step_sends` (one message per
 * enrollment and step), webhook deliveries, and the enrollments in one UPDATE. A crash before the
 * commit leaves the batch as it was; after it, nothing is done twice.
 *
 * Timers are the rows themselves: when no due row is left, the batch's transaction schedules the
 * next `flow_advance` job at the earliest `wake_at` (job key `flow-advance`: one pending job), and
 * the crontab runs the job every minute as a safety net.
 */

/** Enrollments per batch (and per transaction). */
export const ADVANCE_BATCH = 1_000;
export const ADVANCE_JOB_KEY = 'flow-advance';
/**
 * The advance job runs at the priority of transactional work, ahead of the deliveries it queues: at
 * the deliveries' priority it waited behind them, and a triggered message was queued seconds late.
 */
const ADVANCE_PRIORITY = 0;

// definitions per (flow, version, flow edit time): the edit time tells a version rewritten in place apart
const DEFINITION_CACHE_SIZE = 1_000;
const definitions = new Map<string, FlowDefinition>();

const defKeyOf = (r: { flow_id: string; version: number; flow_updated_at: Date }) =>
  `${r.flow_id}@${r.version}:${r.flow_updated_at.getTime()}`;

/**
 * Held, until commit, by a nudge and by a batch's schedule before it reads the enrollments: a batch
 * then computes its next run only once every transaction that nudged before it has committed, so it
 * sees their enrollments. Without it a batch read the enrollments, then waited for a nudging
 * transaction's hold on the job's row, and wrote its time over the nudge when that one committed:
 * an enrollment made at that instant waited for the crontab's minute (or, with nothing else due, a
 * contact's quiet hours) instead of running at once.
 */
const SCHEDULE_LOCK = sql`pg_advisory_xact_lock(hashtextextended(${ADVANCE_JOB_KEY}, 0))`;

/**
 * Makes sure an advance runs now (after enrolling, or when a wait_for_event's event came): replaces
 * the pending `flow-advance` job, or adds one beside the running one. Call it in the transaction
 * that made the enrollments due.
 */
export async function nudgeAdvance(db: Db | Tx): Promise<void> {
  await sql`select graphile_worker.add_job('flow_advance', '{}'::json,
              job_key => ${ADVANCE_JOB_KEY}, priority => ${ADVANCE_PRIORITY})
      from (select ${SCHEDULE_LOCK}) held`.execute(db);
}

/**
 * The next advance, enqueued by a statement that computes its time: the earliest wake_at of the
 * enrollments no other batch holds (an enrollment committed before this statement is seen; one
 * committed after it comes with its own nudge, which replaces this job; SCHEDULE_LOCK keeps the
 * two in that order), but within a second when another batch holds due ones: that batch's own
 * schedule cannot see the rows this one holds, and whichever commits last sets the job, so each
 * looks again soon rather than trusting the other.
 */
async function scheduleNext(tx: Tx): Promise<void> {
  // first, alone: the statement below must read the enrollments of every nudge made before it
  await sql`select ${SCHEDULE_LOCK}`.execute(tx);
  // the active flows as an array keep the partial index's order: both reads are index scans
  const active = sql`flow_enrollments e
    where e.status = 'active' and e.wake_at is not null
      and e.flow_id = any (array(select id from flows where status = 'active'))`;
  await sql`select graphile_worker.add_job('flow_advance', '{}'::json, run_at => n.at,
              job_key => ${ADVANCE_JOB_KEY}, priority => ${ADVANCE_PRIORITY})
      from (select least(
              (select e.wake_at from ${active} order by e.wake_at limit 1 for update of e skip locked),
              (select greatest(e.wake_at, now() + interval '1 second') from ${active}
                order by e.wake_at limit 1)) as at) n
     where n.at is not null`.execute(tx);
}

async function takeDue(tx: Tx, limit: number, onlyIds: string[] | null): Promise<DueEnrollment[]> {
  // the due ids are locked first, in the partial index's order, and only those rows are joined: a
  // join over every due enrollment made the planner sort half a million rows for the first 1,000
  const { rows } = await sql<DueEnrollment>`
    with due as materialized (
      select e.id from flow_enrollments e
       where e.status = 'active' and e.wake_at <= now()
         and e.flow_id = any (array(select id from flows where status = 'active'))
         ${onlyIds ? sql`and e.id = any(${onlyIds}::uuid[])` : sql``}
       order by e.wake_at
       limit ${limit}
         for update of e skip locked)
    select e.id, e.project_id, e.flow_id, e.version, e.contact_id, e.step_id, e.waiting_for, e.created_at,
           e.history -> -1 as last, f.updated_at as flow_updated_at,
           c.email, c.first_name, c.last_name, coalesce(c.properties, '{}'::jsonb) as properties, c.subscribed,
           exists (select 1 from suppressions s where s.project_id = e.project_id and s.email = c.email
                     and s.reason = any(${reasonsBlocking('automation')}::text[])) as suppressed
      from due
      join flow_enrollments e on e.id = due.id
      join flows f on f.id = e.flow_id
      join contacts c on c.id = e.contact_id
     order by e.wake_at`.execute(tx);
  return rows;
}

/** The definitions of the batch's versions: cached ones as they are, the others in one query. */
async function definitionsOf(tx: Tx, rows: DueEnrollment[]): Promise<void> {
  const missing = new Map<string, DueEnrollment>();
  for (const r of rows) if (!definitions.has(defKeyOf(r))) missing.set(defKeyOf(r), r);
  if (missing.size === 0) return;
  const wanted = [...missing.values()];
  const { rows: found } = await sql<{ flow_id: string; version: number; definition: FlowDefinition }>`
    select v.flow_id, v.version, v.definition from flow_versions v
      join unnest(${wanted.map((r) => r.flow_id)}::uuid[], ${wanted.map((r) => r.version)}::int[]) as w(f, n)
        on v.flow_id = w.f and v.version = w.n`.execute(tx);
  for (const r of wanted) {
    const def = found.find((f) => f.flow_id === r.flow_id && f.version === r.version);
    if (!def) continue;
    if (definitions.size >= DEFINITION_CACHE_SIZE)
      definitions.delete(definitions.keys().next().value as string);
    definitions.set(defKeyOf(r), def.definition);
  }
}

const NO_DEFINITION: FlowDefinition = {
  trigger: { type: 'manual' },
  reentry: { policy: 'once' },
  goal: null,
  steps: [],
};

type AtStep<T extends Step['type']> = { walker: Walker; step: Extract<Step, { type: T }> };

/** Branch steps: each branch step's conditions evaluated in one query for its enrollments. */
async function resolveBranches(tx: Tx, now: Date, pending: AtStep<'branch'>[]) {
  const groups = new Map<string, AtStep<'branch'>[]>();
  for (const p of pending) {
    const key = `${p.walker.defKey}#${p.step.id}`;
    groups.set(key, [...(groups.get(key) ?? []), p]);
  }
  for (const group of groups.values()) {
    const { step } = group[0];
    const picked = await pickBranches(
      tx,
      group[0].walker.row.project_id,
      step.branches.map((b) => b.condition),
      [...new Set(group.map((p) => p.walker.row.contact_id))],
    );
    for (const { walker } of group) {
      const i = picked.get(walker.row.contact_id) ?? -1;
      record(walker, step, now, i >= 0 ? `branch_${i}` : 'default');
      walker.at = i >= 0 ? step.branches[i].next : step.default_next;
    }
  }
}

/** Walks every enrollment of the batch to where it stops, resolving batch steps round by round. */
async function walkAll(tx: Tx, plan: SendPlan, walkers: Walker[], now: Date, webhooks: PlannedWebhook[]) {
  let moving = walkers;
  while (moving.length > 0) {
    const stopped: { walker: Walker; step: BatchStep }[] = [];
    for (const walker of moving) {
      const step = walkLocal(walker, now, webhooks);
      if (step) stopped.push({ walker, step });
    }
    const of = <T extends BatchStep['type']>(type: T) =>
      stopped.filter((s): s is AtStep<T> => s.step.type === type);
    await resolveBranches(tx, now, of('branch'));
    await applyContactUpdates(tx, now, of('update_contact'));
    await plan.plan(of('send') as { walker: Walker; step: SendStep }[]);
    moving = stopped.map((s) => s.walker).filter((w) => w.end === null);
  }
}

/**
 * The batch's messages: the guard first (one `flow_step_sends` row per enrollment and step; a
 * message whose row exists already is not written again and its history says `already_sent`),
 * then the emails, their `queued` events, usage and delivery jobs in one statement.
 */
async function writeSends(tx: Tx, sends: PlannedSend[]) {
  if (sends.length === 0) return;
  const guards = sends.map((s) => ({
    enrollment_id: s.walker.row.id,
    step_id: s.step_id,
    email_id: s.email.id,
  }));
  const { rows } = await sql<{ email_id: string }>`
    insert into flow_step_sends (enrollment_id, step_id, email_id)
    select * from json_to_recordset(${JSON.stringify(guards)}::json) as x(enrollment_id uuid, step_id text, email_id uuid)
    on conflict do nothing
    returning email_id`.execute(tx);
  const kept = new Set(rows.map((r) => r.email_id));
  const written = sends.filter((s) => kept.has(s.email.id));
  for (const s of sends)
    if (!kept.has(s.email.id)) {
      s.entry.outcome = 'already_sent';
      delete s.entry.email_id;
    }
  const usage = new Map<string, { projectId: string; total: number; onSharedDomain: number }>();
  for (const s of written) {
    const u = usage.get(s.email.project_id) ?? { projectId: s.email.project_id, total: 0, onSharedDomain: 0 };
    u.total++;
    if (s.shared) u.onSharedDomain++;
    usage.set(s.email.project_id, u);
  }
  await applyWrite(tx, {
    emails: written.map((s) => s.email),
    attachments: [],
    events: written.map((s) => ({
      email_id: s.email.id,
      project_id: s.email.project_id,
      type: 'queued',
      recipient: null,
      detail: { flow_id: s.email.flow_id, step_id: s.step_id },
    })),
    usage: [...usage.values()],
    jobs: [],
    immediate: written.map((s) => s.email.id),
    priority: BULK_PRIORITY,
  });
}

/** Every enrollment of the batch where its walk ended, with its new history entries, in one UPDATE. */
async function writeEnrollments(tx: Tx, walkers: Walker[], now: Date) {
  const updates = walkers.map((w) => {
    const end = w.end ?? { status: 'failed' as const, exit_reason: 'the walk did not end' };
    const added = w.added;
    if (end.status === 'active') return { id: w.row.id, ...end, exit_reason: null, finished_at: null, added };
    return { id: w.row.id, ...end, step_id: null, wake_at: null, waiting_for: null, finished_at: now, added };
  });
  await sql`
    update flow_enrollments fe
       set status = u.status, step_id = u.step_id, wake_at = u.wake_at, waiting_for = u.waiting_for,
           exit_reason = u.exit_reason, finished_at = u.finished_at, history = fe.history || u.added,
           updated_at = now()
      from json_to_recordset(${JSON.stringify(updates)}::json)
        as u(id uuid, status text, step_id text, wake_at timestamptz, waiting_for jsonb, exit_reason text,
             finished_at timestamptz, added jsonb)
     where fe.id = u.id`.execute(tx);
}

/**
 * One batch (see the file's comment): up to `limit` due enrollments (only `onlyIds` when given),
 * advanced and written in one transaction. Returns how many it took.
 */
export async function advanceBatch(
  ctx: DomainContext,
  limit = ADVANCE_BATCH,
  onlyIds: string[] | null = null,
): Promise<number> {
  return ctx.db.transaction().execute(async (tx) => {
    const rows = await takeDue(tx, limit, onlyIds);
    if (rows.length > 0) {
      await definitionsOf(tx, rows);
      const now = new Date();
      const walkers = rows.map((r) => {
        const def = definitions.get(defKeyOf(r));
        const w = startWalk(r, def ?? NO_DEFINITION, defKeyOf(r));
        if (!def) w.end = { status: 'failed', exit_reason: `version ${r.version} of the flow is missing` };
        return w;
      });
      const plan = new SendPlan(ctx, now);
      const webhooks: PlannedWebhook[] = [];
      await walkAll(tx, plan, walkers, now, webhooks);
      await writeSends(tx, plan.sends);
      await queueWebhooks(tx, ctx, webhooks, now);
      await writeEnrollments(tx, walkers, now);
    }
    if (rows.length < limit && onlyIds === null) await scheduleNext(tx);
    return rows.length;
  });
}

/** Errors worth retrying as they are (connection, deadlock, serialization, shutdown): never an enrollment's fault. */
function isTransient(err: unknown): boolean {
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && /^(08|40|53|57|58|E[A-Z])/.test(code)) return true;
  return typeof message === 'string' && /connect|terminat|timeout/i.test(message);
}

/**
 * A batch that failed as a whole, taken again one enrollment at a time, so that one enrollment
 * that cannot advance (whatever the reason) is marked `failed` with the error instead of stopping
 * every flow behind it. A transient error is thrown again: the job is retried.
 */
async function isolateFailure(
  ctx: DomainContext,
  cause: unknown,
  onError: (id: string, err: unknown) => void,
) {
  if (isTransient(cause)) throw cause;
  const ids = await ctx.db
    .selectFrom('flow_enrollments as e')
    .innerJoin('flows as f', 'f.id', 'e.flow_id')
    .select('e.id')
    .where('e.status', '=', 'active')
    .where('f.status', '=', 'active')
    .where('e.wake_at', '<=', new Date())
    .orderBy('e.wake_at')
    .limit(ADVANCE_BATCH)
    .execute();
  for (const { id } of ids) {
    try {
      await advanceBatch(ctx, 1, [id]);
    } catch (err) {
      if (isTransient(err)) throw err;
      onError(id, err);
      await ctx.db
        .updateTable('flow_enrollments')
        .set({
          status: 'failed',
          exit_reason: `engine error: ${String((err as Error).message ?? err).slice(0, 300)}`,
          step_id: null,
          wake_at: null,
          waiting_for: null,
          finished_at: new Date(),
          updated_at: new Date(),
        })
        .where('id', '=', id)
        .where('status', '=', 'active')
        .execute();
    }
  }
  return ids.length;
}

/**
 * Batches one `flow_advance` job keeps in flight through a backlog: while one batch's statements
 * run in PostgreSQL, the next is walked and rendered in Node (SKIP LOCKED gives each its own rows).
 */
const ADVANCE_LANES = 2;

/**
 * The `flow_advance` job: batches until no due enrollment is left (the last batch schedules the
 * next run at the earliest wake_at). A first batch that comes back full means a backlog: lanes
 * then run side by side, and one more batch alone at the end schedules the next run with no other
 * batch holding rows (a lane's schedule, made while another holds due rows, says "in a second").
 * Returns how many enrollments it advanced.
 */
export async function advanceFlows(
  ctx: DomainContext,
  onError: (enrollmentId: string, err: unknown) => void = () => {},
): Promise<number> {
  const batch = async () => {
    try {
      return await advanceBatch(ctx);
    } catch (err) {
      return await isolateFailure(ctx, err, onError);
    }
  };
  const first = await batch();
  if (first < ADVANCE_BATCH) return first;
  const lane = async () => {
    let total = 0;
    for (;;) {
      const taken = await batch();
      total += taken;
      if (taken < ADVANCE_BATCH) return total;
    }
  };
  const totals = await Promise.all(Array.from({ length: ADVANCE_LANES }, lane));
  return first + totals.reduce((a, b) => a + b, 0) + (await batch());
}
