import { sql } from 'kysely';
import type { Tx } from '../db/database.ts';

export interface JobSpec {
  task: string;
  payload: Record<string, unknown>;
  runAt?: Date | null;
  maxAttempts?: number;
  jobKey?: string | null;
}

/**
 * Enqueues jobs inside the caller's transaction with one `add_jobs` call, so a row and the job
 * about it commit together (the outbox), and a thousand jobs cost one statement, not a thousand.
 */
export async function enqueue(tx: Tx, jobs: JobSpec[]): Promise<void> {
  if (jobs.length === 0) return;
  await sql`select count(*) from graphile_worker.add_jobs(${jobSpecs(jobs)})`.execute(tx);
}

/** The `job_spec[]` expression for `graphile_worker.add_jobs`, for use inside a larger statement. */
export function jobSpecs(jobs: JobSpec[]) {
  return sql`array(
      select row(t, p::json, null, r, m, k, null, null)::graphile_worker.job_spec
        from unnest(${jobs.map((j) => j.task)}::text[], ${jobs.map((j) => JSON.stringify(j.payload))}::text[],
                    ${jobs.map((j) => j.runAt ?? null)}::timestamptz[], ${jobs.map((j) => j.maxAttempts ?? 25)}::int[],
                    ${jobs.map((j) => j.jobKey ?? null)}::text[]) as x(t, p, r, m, k))`;
}
