import type pg from 'pg';
import type { Db } from '../../db/database.ts';

export interface RequestLogEntry {
  keyId: string;
  keyName: string;
  projectId: string | null;
  method: string;
  path: string;
  status: number;
  latencyMs: number;
  at: Date;
  account: boolean; // an account-API call by an all-access key: the separate log
}

const MAX_BUFFER = 50_000;

/**
 * Collects request log entries in memory and writes them in one set-based statement per table
 * every `intervalMs` (or sooner when many pile up), so logging never waits on the database
 * inside a request. The keys' `last_used_at` is updated in the same flush.
 */
export class RequestLogWriter {
  private buffer: RequestLogEntry[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private readonly pool: pg.Pool;
  private readonly intervalMs: number;
  dropped = 0;

  constructor(pool: pg.Pool, intervalMs = 500) {
    this.pool = pool;
    this.intervalMs = intervalMs;
  }

  add(entry: RequestLogEntry): void {
    if (this.buffer.length >= MAX_BUFFER) {
      this.dropped++;
      return;
    }
    this.buffer.push(entry);
    if (this.buffer.length >= 2_000) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.intervalMs);
      this.timer.unref();
    }
  }

  /** Writes what is buffered; resolves when it is committed. */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const batch = this.buffer;
    this.buffer = [];
    this.flushing = this.flushing.then(() => (batch.length ? this.write(batch) : undefined)).catch(() => {});
    return this.flushing;
  }

  private async write(batch: RequestLogEntry[]): Promise<void> {
    for (const account of [false, true]) {
      const rows = batch.filter((e) => e.account === account);
      if (rows.length === 0) continue;
      const table = account ? 'account_request_logs' : 'request_logs';
      await this.pool.query(
        `insert into ${table} (api_key_id, key_name, project_id, method, path, status, latency_ms, created_at)
         select * from unnest($1::uuid[], $2::text[], $3::uuid[], $4::text[], $5::text[], $6::int[], $7::real[], $8::timestamptz[])`,
        [
          rows.map((r) => r.keyId),
          rows.map((r) => r.keyName),
          rows.map((r) => r.projectId),
          rows.map((r) => r.method),
          rows.map((r) => r.path),
          rows.map((r) => r.status),
          rows.map((r) => r.latencyMs),
          rows.map((r) => r.at),
        ],
      );
    }
    const lastUse = new Map<string, Date>();
    for (const e of batch)
      if (!lastUse.has(e.keyId) || (lastUse.get(e.keyId) as Date) < e.at) lastUse.set(e.keyId, e.at);
    await this.pool.query(
      `update api_keys k set last_used_at = u.at
         from unnest($1::uuid[], $2::timestamptz[]) as u(id, at)
        where k.id = u.id and (k.last_used_at is null or k.last_used_at < u.at)`,
      [[...lastUse.keys()], [...lastUse.values()]],
    );
  }

  async close(): Promise<void> {
    await this.flush();
  }
}

/** A key's request history, newest first. */
export async function listRequests(
  db: Db,
  keyId: string,
  log: 'project' | 'account',
  page: { limit: number; offset: number },
) {
  const table = log === 'account' ? 'account_request_logs' : 'request_logs';
  const [rows, total] = await Promise.all([
    db
      .selectFrom(table)
      .selectAll()
      .where('api_key_id', '=', keyId)
      .orderBy('id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('api_key_id', '=', keyId)
      .executeTakeFirstOrThrow(),
  ]);
  return {
    data: rows.map((r) => ({
      id: String(r.id),
      object: 'request' as const,
      key_name: r.key_name,
      project_id: r.project_id,
      method: r.method,
      path: r.path,
      status: r.status,
      latency_ms: Math.round(r.latency_ms * 100) / 100,
      created_at: r.created_at.toISOString(),
    })),
    total: Number(total.n),
    ...page,
  };
}

type RequestRow = { id: string; method: string; path: string; status: number; created_at: Date };

/**
 * A project's request log (every key acting in it), newest first, by cursor: `limit` entries
 * `after` an entry's number (older ones) or `before` one (newer ones), and whether more follow.
 * Resend's `logs.list` (the door, issue 51).
 */
export async function projectRequests(
  db: Db,
  projectId: string,
  cursor: { limit: number; after?: string; before?: string },
) {
  const newer = cursor.before !== undefined;
  let query = db
    .selectFrom('request_logs')
    .select(['id', 'method', 'path', 'status', 'created_at'])
    .where('project_id', '=', projectId);
  const anchor = cursor.after ?? cursor.before;
  if (anchor !== undefined) query = query.where('id', newer ? '>' : '<', Number(anchor));
  const rows = (await query
    .orderBy('id', newer ? 'asc' : 'desc')
    .limit(cursor.limit + 1)
    .execute()) as unknown as RequestRow[];
  const shown = rows.slice(0, cursor.limit);
  return { rows: newer ? shown.reverse() : shown, has_more: rows.length > cursor.limit };
}

/** One entry of a project's request log, or undefined. */
export async function projectRequest(db: Db, projectId: string, id: string) {
  return (await db
    .selectFrom('request_logs')
    .select(['id', 'method', 'path', 'status', 'created_at'])
    .where('project_id', '=', projectId)
    .where('id', '=', Number(id))
    .executeTakeFirst()) as unknown as RequestRow | undefined;
}
