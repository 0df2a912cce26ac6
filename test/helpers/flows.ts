import { eventually } from './eventually.ts';
import type { TestServer } from './server.ts';

/**
 * Waits until the audience events and flow jobs queued so far have run (with `tasks` naming more
 * kinds of job to wait for): none of them is due and still to be tried, and no announcement is left
 * in the audience outbox.
 */
export async function flowWorkSettled(
  server: TestServer,
  { tasks = [], timeoutMs = 20_000 }: { tasks?: string[]; timeoutMs?: number } = {},
) {
  await eventually(
    async () => {
      const { rows } = await server.runtime.ctx.pool.query(
        `select count(*)::int as n from graphile_worker.jobs
          where task_identifier = any($1::text[])
            and run_at <= now() and attempts < max_attempts`,
        [['audience_event', 'audience_outbox', 'flow_advance', ...tasks]],
      );
      const { rows: outbox } = await server.runtime.ctx.pool.query(
        'select count(*)::int as n from audience_outbox',
      );
      if (rows[0].n > 0 || outbox[0].n > 0)
        throw new Error(`${rows[0].n} jobs, ${outbox[0].n} announcements`);
    },
    { timeoutMs, message: 'flow work never settled' },
  );
}
