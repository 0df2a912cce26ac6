import { type RawBuilder, sql } from 'kysely';
import type { Tx } from './database.ts';

/** The name of a task the worker runs: a key of graphile-worker's `GraphileWorker.Tasks` (src/jobs/payloads.ts). */
export type TaskName = keyof GraphileWorker.Tasks;

/** A job to enqueue: a task and the payload that task receives, checked against each other. */
export type JobSpec<T extends TaskName = TaskName> = {
  [K in T]: {
    task: K;
    payload: GraphileWorker.Tasks[K];
    runAt?: Date | null;
    maxAttempts?: number;
    jobKey?: string | null;
    /** graphile-worker's priority: lower runs first; marketing work yields to transactional mail */
    priority?: number;
  };
}[T];

/** The priority of marketing and automation work (campaign batches and their deliveries). */
export const BULK_PRIORITY = 10;

/** The priority of the service's own mail (codes, notices): ahead of transactional mail (0). */
export const SYSTEM_PRIORITY = -10;

const DEFAULT_MAX_ATTEMPTS = 25;

/**
 * The task that delivers mail of a stream: transactional mail (and the service's own, `system`) has
 * its own, which a share of every worker process's workers runs alone (src/jobs/worker.ts), so a
 * campaign of any size never holds the workers a transactional message needs.
 */
export function deliveryTask(stream: string): 'deliver_email' | 'deliver_transactional' {
  return stream === 'transactional' || stream === 'system' ? 'deliver_transactional' : 'deliver_email';
}

/**
 * The job key of an email's own delivery job (a scheduled send or a retry): one such job per email,
 * which cancelling the email removes by this key.
 */
export function deliveryJobKey(emailId: string): string {
  return `email:${emailId}`;
}

/**
 * Enqueues jobs inside the caller's transaction with one `add_jobs` call, so a row and the job
 * about it commit together (the outbox), and a thousand jobs cost one statement, not a thousand.
 */
export async function enqueue(tx: Tx, jobs: JobSpec[]): Promise<void> {
  if (jobs.length === 0) return;
  await addJobs(jobs).execute(tx);
}

/** `select` that enqueues the jobs with one `add_jobs` call, for the end of a larger statement. */
export function addJobs(jobs: JobSpec[]) {
  return sql`select count(*) from graphile_worker.add_jobs(${jobSpecs(jobs)})`;
}

/** The `job_spec[]` expression for `graphile_worker.add_jobs`, for use inside a larger statement. */
export function jobSpecs(jobs: JobSpec[]) {
  return sql`array(
      select row(t, p::json, null, r, m, k, pr, null)::graphile_worker.job_spec
        from unnest(${jobs.map((j) => j.task)}::text[], ${jobs.map((j) => JSON.stringify(j.payload))}::text[],
                    ${jobs.map((j) => j.runAt ?? null)}::timestamptz[], ${jobs.map((j) => j.maxAttempts ?? DEFAULT_MAX_ATTEMPTS)}::int[],
                    ${jobs.map((j) => j.jobKey ?? null)}::text[], ${jobs.map((j) => j.priority ?? null)}::int[]) as x(t, p, r, m, k, pr))`;
}

/**
 * One `job_spec` whose payload a SQL expression computes: a job about rows that the same statement
 * writes, enqueued without their ids passing through Node. The expression is typed (`sql<Payload>`)
 * as the task's payload, which is what it must build.
 */
export function jobSpecOf<T extends TaskName>(task: T, payload: RawBuilder<GraphileWorker.Tasks[T]>) {
  return sql`row(${task}::text, ${payload}, null, null, ${DEFAULT_MAX_ATTEMPTS}::int, null, null, null)::graphile_worker.job_spec`;
}
