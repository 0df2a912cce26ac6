import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer, unlimitedSender } from '../helpers/server.ts';

/**
 * Retries come back in batches (issue 46): messages deferred together (a greylisting or throttling
 * server) get one job per second they are due in, whose ids graphile-worker merges, not a job per
 * message; each comes back once and is delivered once, with its Message-ID.
 */

const MESSAGES = 20;
let server: TestServer;
let account: SignupResult;

beforeAll(async () => {
  // a long first step, so the deferred messages' jobs can be read before they run
  server = await startTestServer({ POSTHORN_RETRY_SCHEDULE: '600,600' });
  account = await unlimitedSender(server);
}, 60_000);
afterAll(() => server?.close());

describe('retries of messages deferred together', () => {
  it('share a job per second they are due in, and each is delivered once', async () => {
    const tried = new Set<string>();
    // the relay greylists: 451 to each recipient's first try
    server.sink.onRecipient = (to) => {
      if (!to.startsWith('grey')) return undefined;
      if (tried.has(to)) return undefined;
      tried.add(to);
      return { code: 451, message: '4.7.1 greylisted, try again later' };
    };
    const res = await server.call('POST', '/v1/emails/batch', {
      key: account.project_key.key,
      body: Array.from({ length: MESSAGES }, (_, i) => ({
        from: 'Tests <onboarding@posthorn.localhost>',
        to: `grey${i}@example.com`,
        subject: `message ${i}`,
        text: 'hello',
      })),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const ids: string[] = res.body.data.map((d: { id: string }) => d.id);
    const db = server.runtime.ctx.db;
    await eventually(
      async () => {
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from emails where id = any(${ids}::uuid[]) and status = 'deferred'`.execute(
          db,
        );
        expect(rows[0].n).toBe(MESSAGES);
      },
      { timeoutMs: 60_000, message: 'the messages were not all deferred' },
    );
    const { rows: jobs } = await sql<{ key: string | null; run_at: Date; payload: unknown }>`
      select j.key, j.run_at, j.payload from graphile_worker._private_jobs j
        join graphile_worker._private_tasks t on t.id = j.task_id
       where t.identifier = 'deliver_transactional'`.execute(db);
    // one job per second the retries are due in (they were deferred within a moment), not 20
    expect(jobs.length).toBeGreaterThan(0);
    expect(jobs.length).toBeLessThan(MESSAGES);
    const queued = jobs.flatMap((j) => (j.payload as { ids: string[] }[]).flatMap((p) => p.ids));
    expect(queued.sort()).toEqual([...ids].sort());
    const { rows: due } = await sql<{ id: string; next_attempt_at: Date }>`
      select id, next_attempt_at from emails where id = any(${ids}::uuid[])`.execute(db);
    for (const job of jobs) {
      expect(job.key).toMatch(/^retry:deliver_transactional:0:\d+$/);
      expect(job.run_at.getTime() % 1000).toBe(0);
      // each message's next attempt is its job's time
      for (const id of (job.payload as { ids: string[] }[]).flatMap((p) => p.ids))
        expect(due.find((d) => d.id === id)?.next_attempt_at.getTime()).toBe(job.run_at.getTime());
    }

    // the retries run now: every message handed to the relay (`sent`), once
    await sql`update graphile_worker._private_jobs set run_at = now() where key like 'retry:%'`.execute(db);
    await eventually(
      async () => {
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from emails where id = any(${ids}::uuid[]) and status = 'sent'`.execute(
          db,
        );
        expect(rows[0].n).toBe(MESSAGES);
      },
      { timeoutMs: 60_000, message: 'the retried messages were not all delivered' },
    );
    const { rows: sent } = await sql<{ message_id: string }>`
      select message_id from emails where id = any(${ids}::uuid[])`.execute(db);
    const received = server.sink.messages.map((m) => m.parsed.messageId);
    for (const { message_id } of sent) expect(received.filter((m) => m === message_id)).toHaveLength(1);
    server.sink.onRecipient = undefined;
  }, 180_000);
});
