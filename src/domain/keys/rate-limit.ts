import type pg from 'pg';
import { RateLimitError } from '../core/errors.ts';

export interface RateLimitState {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

/**
 * Per-project request rate limit over one-second windows, counted in PostgreSQL so that it holds
 * across every API node: one upsert on a single row per project. Once a node has seen a window
 * exhausted it refuses locally until the window ends, so a flood costs the database nothing.
 */
export class RateLimiter {
  private readonly pool: pg.Pool;
  readonly limit: number;
  private readonly exhausted = new Map<string, number>();

  constructor(pool: pg.Pool, perSecond: number) {
    this.pool = pool;
    this.limit = perSecond;
  }

  get enabled(): boolean {
    return this.limit > 0;
  }

  /** Counts one request; throws RateLimitError (with the state attached) over the limit. */
  async take(projectId: string, now = Date.now()): Promise<RateLimitState> {
    // a request whose second was over by the time its count reached the database (nodes and
    // requests race across a window's end) counts in the newer window, never starts its old one again
    const window = Math.floor(now / 1000);
    const resetSeconds = 1;
    if (this.exhausted.get(projectId) === window) throw this.refusal(resetSeconds);
    const { rows } = await this.pool.query<{ count: number }>({
      name: 'posthorn_rate_limit_take',
      text: `insert into rate_limit_windows as w (project_id, window_start, count) values ($1, $2, 1)
             on conflict (project_id) do update
               set count = case when excluded.window_start > w.window_start then 1 else w.count + 1 end,
                   window_start = greatest(w.window_start, excluded.window_start)
             returning count`,
      values: [projectId, window],
    });
    const count = rows[0].count;
    if (count > this.limit) {
      this.exhausted.set(projectId, window);
      if (this.exhausted.size > 10_000) this.exhausted.clear();
      throw this.refusal(resetSeconds);
    }
    return { limit: this.limit, remaining: this.limit - count, resetSeconds };
  }

  private refusal(resetSeconds: number) {
    const error = new RateLimitError(
      `Too many requests: this project may make ${this.limit} requests per second; retry after ${resetSeconds} s`,
      resetSeconds,
    );
    return Object.assign(error, { state: { limit: this.limit, remaining: 0, resetSeconds } });
  }
}
