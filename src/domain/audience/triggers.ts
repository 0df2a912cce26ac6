import { sql } from 'kysely';
import type { Db, Tx } from '../../db/database.ts';
import { enqueue, type JobSpec } from '../../db/enqueue.ts';

/**
 * What happens to an audience, announced as graphile-worker jobs (`audience_event`) committed in
 * the same transaction as the change itself: flows and webhooks subscribe to these without
 * touching the code that causes them. Bulk changes announce many ids in one job.
 *
 * Tracked events, the busiest stream, go through the `audience_outbox` table instead: the
 * statement that writes the events also writes their announcement there (one small row), and the
 * `audience_outbox` job turns the rows into the same `audience_event` jobs, merged per type and
 * project. A lost nudge delays that by at most a minute (the job also runs from the crontab);
 * nothing committed is lost.
 */
export type AudienceEventType =
  | 'contact.created'
  | 'contact.updated'
  | 'contact.deleted'
  | 'contact.subscription_changed'
  /** A contact's choice of one topic changed (`topic_id`, `subscribed`). */
  | 'contact.topic_changed'
  | 'list.joined'
  | 'event.tracked';

export interface AudienceEvent {
  type: AudienceEventType;
  project_id: string;
  contact_ids?: string[];
  event_ids?: string[];
  list_id?: string;
  topic_id?: string;
  subscribed?: boolean;
}

/** The most ids one `audience_event` job carries. */
export const MAX_IDS_PER_JOB = 10_000;

export function audienceJob(event: AudienceEvent): JobSpec {
  return { task: 'audience_event', payload: { ...event } };
}

export async function announce(tx: Tx, events: AudienceEvent[]): Promise<void> {
  await enqueue(
    tx,
    events.filter((e) => (e.contact_ids?.length ?? 1) > 0 && (e.event_ids?.length ?? 1) > 0).map(audienceJob),
  );
}

/**
 * Merges announcements of the same type, project, list and subscription into one, in order of
 * first appearance, each carrying at most MAX_IDS_PER_JOB ids.
 */
export function mergeAnnouncements(events: AudienceEvent[]): AudienceEvent[] {
  const merged = new Map<string, AudienceEvent[]>();
  for (const e of events) {
    const key = JSON.stringify([
      e.type,
      e.project_id,
      e.list_id ?? null,
      e.topic_id ?? null,
      e.subscribed ?? null,
    ]);
    const chunks = merged.get(key) ?? [];
    merged.set(key, chunks);
    const ids = e.event_ids ? 'event_ids' : 'contact_ids';
    if (!e[ids]) {
      chunks.push(e); // nothing to merge
      continue;
    }
    for (const id of e[ids]) {
      let last = chunks.at(-1);
      if (!last?.[ids] || last[ids].length >= MAX_IDS_PER_JOB) {
        last = { ...e, [ids]: [] };
        chunks.push(last);
      }
      last[ids]?.push(id);
    }
  }
  return [...merged.values()].flat();
}

/**
 * The `audience_outbox` job's work: takes up to `limit` announcements (skipping rows another
 * drain holds), enqueues them as merged `audience_event` jobs and deletes them, in one
 * transaction. Returns how many it took; the caller repeats while that is the whole `limit`.
 */
export async function drainAudienceOutbox(db: Db, limit = 5_000): Promise<number> {
  return db.transaction().execute(async (tx) => {
    const { rows } = await sql<{ id: number; event: AudienceEvent }>`
      delete from audience_outbox where id in (
        select id from audience_outbox order by id limit ${limit} for update skip locked)
      returning id, event`.execute(tx);
    rows.sort((a, b) => a.id - b.id); // in the order they were written
    await announce(tx, mergeAnnouncements(rows.map((r) => r.event)));
    return rows.length;
  });
}

/**
 * Nudges the `audience_outbox` job after announcements were committed: at most one nudge per
 * `intervalMs`, outside any request. graphile-worker's job key keeps one pending drain at a time
 * (a drain that is already running gets a successor, so rows written during it are taken too).
 */
export class OutboxNudge {
  private timer: NodeJS.Timeout | undefined;
  private readonly db: Db;
  private readonly intervalMs: number;

  constructor(db: Db, intervalMs = 100) {
    this.db = db;
    this.intervalMs = intervalMs;
  }

  nudge(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void enqueueDrain(this.db).catch(() => {
        // the crontab runs the drain every minute: what this nudge would have started is not lost
      });
    }, this.intervalMs);
    this.timer.unref();
  }

  /** Sends a pending nudge now (at shutdown). */
  async close(): Promise<void> {
    if (!this.timer) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    await enqueueDrain(this.db).catch(() => {});
  }
}

export async function enqueueDrain(db: Db): Promise<void> {
  await sql`select graphile_worker.add_job('audience_outbox', '{}'::json,
              job_key => 'audience_outbox', job_key_mode => 'preserve_run_at')`.execute(db);
}
