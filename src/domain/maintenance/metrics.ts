import { sql } from 'kysely';
import { Counter, Registry } from 'prom-client';
import type { Db } from '../../db/database.ts';

/**
 * This process's own counters, incremented where the work happens: deliveries by outcome, webhook
 * attempts by outcome, SMTP sessions by door, rows pruned by retention. Each process counts for
 * itself; GET /metrics (the API role) shows this registry, so the worker's and the SMTP doors'
 * counts appear there when they run in the API's process (`posthorn start`). A worker-only or
 * SMTP-only process keeps counting but has no port to show it on: the queue gauges, read from
 * the database, are what every API node shows for the whole deployment.
 */
export const processMetrics = new Registry();

const deliveries = new Counter({
  name: 'posthorn_deliveries_total',
  help: 'Delivery attempts of emails by outcome (the status each attempt left the message in)',
  labelNames: ['outcome'],
  registers: [processMetrics],
});
const webhookAttempts = new Counter({
  name: 'posthorn_webhook_attempts_total',
  help: 'Webhook delivery attempts by outcome (succeeded: a 2xx answer)',
  labelNames: ['outcome'],
  registers: [processMetrics],
});
const smtpSessions = new Counter({
  name: 'posthorn_smtp_sessions_total',
  help: 'SMTP connections opened, by door (submission or mx)',
  labelNames: ['door'],
  registers: [processMetrics],
});
const pruned = new Counter({
  name: 'posthorn_retention_pruned_total',
  help: 'Rows pruned by retention, by kind (request_logs, webhook_attempts, message_bodies, ...)',
  labelNames: ['kind'],
  registers: [processMetrics],
});

const providerFeedback = new Counter({
  name: 'posthorn_provider_feedback_total',
  help: "Providers' notifications (Amazon SES by SNS) by kind and outcome (applied, unmatched, ignored, confirmed, not_confirmed)",
  labelNames: ['provider', 'kind', 'outcome'],
  registers: [processMetrics],
});

// every known series from the start, so a rate over the first event is not lost
for (const outcome of ['sent', 'delivered', 'deferred', 'bounced', 'complained', 'failed'])
  deliveries.inc({ outcome }, 0);
for (const outcome of ['succeeded', 'failed']) webhookAttempts.inc({ outcome }, 0);
for (const door of ['submission', 'mx']) smtpSessions.inc({ door }, 0);

/** Counts one delivery attempt per message, by the status it left the message in. */
export function countDeliveries(outcomes: string[]): void {
  for (const outcome of outcomes) deliveries.inc({ outcome });
}

/** Counts one webhook attempt. */
export function countWebhookAttempt(outcome: string): void {
  webhookAttempts.inc({ outcome });
}

/** Counts one provider notification recorded (a duplicate is not counted again). */
export function countProviderFeedback(provider: string, kind: string, outcome: string): void {
  providerFeedback.inc({ provider, kind, outcome });
}

/** Counts one SMTP connection at a door. */
export function countSmtpSession(door: 'submission' | 'mx'): void {
  smtpSessions.inc({ door });
}

/** Counts rows pruned by retention. */
export function countPruned(kind: string, rows: number): void {
  if (rows > 0) pruned.inc({ kind }, rows);
}

export type JobState = 'waiting' | 'scheduled' | 'running' | 'failed';

/**
 * graphile-worker's jobs by task and state, in one pass over its jobs table (which holds only
 * unfinished jobs, so it stays small): waiting (due and free), scheduled (due later, retries
 * included), running (locked by a worker), failed (out of attempts, kept for inspection).
 */
export async function jobsByTask(db: Db): Promise<{ task: string; state: JobState; count: number }[]> {
  const { rows } = await sql<{
    task: string;
    waiting: number;
    scheduled: number;
    running: number;
    failed: number;
  }>`
    select t.identifier as task,
           count(*) filter (where j.locked_at is null and j.attempts < j.max_attempts and j.run_at <= now())::int as waiting,
           count(*) filter (where j.locked_at is null and j.attempts < j.max_attempts and j.run_at > now())::int as scheduled,
           count(*) filter (where j.locked_at is not null)::int as running,
           count(*) filter (where j.locked_at is null and j.attempts >= j.max_attempts)::int as failed
      from graphile_worker._private_jobs j
      join graphile_worker._private_tasks t on t.id = j.task_id
     group by t.identifier`.execute(db);
  const states: JobState[] = ['waiting', 'scheduled', 'running', 'failed'];
  return rows.flatMap((r) => states.map((state) => ({ task: r.task, state, count: r[state] })));
}
