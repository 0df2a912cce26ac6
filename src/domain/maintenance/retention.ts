import { type RawBuilder, sql } from 'kysely';
import type { RetentionPeriods } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import { countPruned } from './metrics.ts';

/** What retention prunes; each kind has its own period (POSTHORN_RETENTION_*). */
export type RetentionKind =
  | 'request_logs'
  | 'account_request_logs'
  | 'webhook_attempts'
  | 'idempotency_keys'
  | 'message_bodies'
  | 'inbound_raw'
  | 'provider_feedback';

export interface RetentionOptions {
  /** The clock (tests move it forward). */
  now?: Date;
  /** Rows per statement: each statement is a short transaction of its own. */
  batchSize?: number;
  /** Time one kind may take per run; what is left waits for the next run. */
  budgetMs?: number;
}

export interface PruneResult {
  kind: RetentionKind;
  /** Rows older than this were pruned (null: kept forever, the period is 0). */
  cutoff: Date | null;
  pruned: number;
  statements: number;
  /** False when the time budget ran out with rows left. */
  finished: boolean;
}

type Batch = (cutoff: Date, limit: number, now: Date) => RawBuilder<{ n: number }>;

// Each statement names its rows with `= any(array(select ... limit n))`: the inner select walks the
// age index, the outer statement reaches each row by its key (or ctid). A join on a CTE instead lets
// the planner pick a hash join over a scan of the whole table, for every batch.

/** Deletes the oldest rows of an append-only log (request_logs, account_request_logs, provider_feedback). */
const deleteLogs =
  (table: 'request_logs' | 'account_request_logs' | 'provider_feedback'): Batch =>
  (cutoff, limit) =>
    sql`
    with gone as (delete from ${sql.table(table)}
                   where id = any(array(select id from ${sql.table(table)} where created_at < ${cutoff}
                                         order by created_at limit ${limit}))
                  returning 1)
    select count(*)::int as n from gone`;

/** One statement per kind: prunes up to `limit` rows older than `cutoff`, oldest first, on an index of their age. */
const BATCHES: Record<RetentionKind, Batch> = {
  request_logs: deleteLogs('request_logs'),
  account_request_logs: deleteLogs('account_request_logs'),
  // an attempt still pending is a delivery in progress: it stays until it ends
  webhook_attempts: (cutoff, limit) => sql`
    with gone as (delete from webhook_deliveries
                   where id = any(array(select id from webhook_deliveries
                                         where created_at < ${cutoff} and status <> 'pending'
                                         order by created_at limit ${limit}))
                  returning 1)
    select count(*)::int as n from gone`,
  // (its key is two columns: the row's ctid names it in one)
  idempotency_keys: (cutoff, limit) => sql`
    with gone as (delete from idempotency_keys
                   where ctid = any(array(select ctid from idempotency_keys where created_at < ${cutoff}
                                           order by created_at limit ${limit}))
                  returning 1)
    select count(*)::int as n from gone`,
  // only messages whose delivery is over: a scheduled, queued or deferred one still needs its body;
  // the row (status, recipients, tags, campaign and flow) and its events stay for segments and reports
  message_bodies: (cutoff, limit, now) => sql`
    with pruned as (update emails set html = null, text_body = null, template_data = null, body_pruned_at = ${now}
                     where id = any(array(select id from emails
                                           where body_pruned_at is null and created_at < ${cutoff}
                                             and status in ('sent', 'delivered', 'bounced', 'complained', 'failed',
                                                            'suppressed', 'cancelled')
                                           order by created_at limit ${limit}))
                    returning id),
         bytes as (delete from email_attachments where email_id = any(array(select id from pruned)))
    select count(*)::int as n from pruned`,
  // the parsed message (addresses, bodies, authentication results) stays; the source goes
  inbound_raw: (cutoff, limit, now) => sql`
    with pruned as (update inbound_messages set raw = ''::bytea, raw_pruned_at = ${now}
                     where id = any(array(select id from inbound_messages
                                           where raw_pruned_at is null and created_at < ${cutoff}
                                           order by created_at limit ${limit}))
                    returning 1)
    select count(*)::int as n from pruned`,
  // a notification's row only records what it did (the email's status and events hold the outcome)
  // and keeps SNS from applying one twice, which it redelivers within hours, not weeks
  provider_feedback: deleteLogs('provider_feedback'),
};

const DAY_MS = 86_400_000;

/** Where each kind's period starts, from the configuration; null = kept forever. */
export function retentionCutoffs(periods: RetentionPeriods, now: Date): Record<RetentionKind, Date | null> {
  const before = (ms: number) => (ms > 0 ? new Date(now.getTime() - ms) : null);
  return {
    request_logs: before(periods.requestLogsDays * DAY_MS),
    account_request_logs: before(periods.requestLogsDays * DAY_MS),
    webhook_attempts: before(periods.webhookAttemptsDays * DAY_MS),
    idempotency_keys: before(periods.idempotencyHours * 3_600_000),
    message_bodies: before(periods.messageBodiesDays * DAY_MS),
    inbound_raw: before(periods.inboundRawDays * DAY_MS),
    provider_feedback: before(periods.providerFeedbackDays * DAY_MS),
  };
}

async function pruneKind(
  db: Db,
  kind: RetentionKind,
  cutoff: Date,
  opts: Required<RetentionOptions>,
): Promise<PruneResult> {
  const deadline = Date.now() + opts.budgetMs;
  const result: PruneResult = { kind, cutoff, pruned: 0, statements: 0, finished: false };
  for (;;) {
    const { rows } = await BATCHES[kind](cutoff, opts.batchSize, opts.now).execute(db);
    const n = rows[0]?.n ?? 0;
    result.pruned += n;
    result.statements++;
    countPruned(kind, n);
    if (n < opts.batchSize) return { ...result, finished: true };
    if (Date.now() >= deadline) return result;
  }
}

/**
 * Prunes what is older than its retention period, kind by kind, in batches of `batchSize` rows
 * (one short statement each, oldest first) until none is left or the kind's time budget is spent.
 * Run hourly by the maintenance job, so a year of sending does not fill the disk; events and the
 * emails' metadata are never pruned.
 */
export async function pruneExpiredData(
  db: Db,
  periods: RetentionPeriods,
  options: RetentionOptions = {},
): Promise<PruneResult[]> {
  const opts = { now: new Date(), batchSize: 5_000, budgetMs: 60_000, ...options };
  const cutoffs = retentionCutoffs(periods, opts.now);
  const results: PruneResult[] = [];
  for (const kind of Object.keys(BATCHES) as RetentionKind[]) {
    const cutoff = cutoffs[kind];
    results.push(
      cutoff
        ? await pruneKind(db, kind, cutoff, opts)
        : { kind, cutoff, pruned: 0, statements: 0, finished: true },
    );
  }
  return results;
}
