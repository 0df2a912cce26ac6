import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmbeddedDatabase, freePort, startEmbeddedPostgres } from '../../src/db/embedded.ts';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * PostgreSQL stopped and started again while sends are accepted and delivered (issue 20): during
 * the outage every request is answered, within a bound, with 503 `{error}` and `Retry-After`
 * (never a 500, never a hang), /readyz says the database is down; afterwards the same process
 * serves again without a restart, and every message it acknowledged is delivered (by Message-ID:
 * nothing lost; a duplicate only as an at-least-once resend under the same Message-ID).
 */

const FROM = 'Outage Test <onboarding@posthorn.localhost>';
const ANSWER_BOUND_MS = 15_000;

let dataDir: string;
let port: number;
let database: EmbeddedDatabase | null = null;
let server: TestServer;

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'posthorn-outage-'));
  port = await freePort();
  database = await startEmbeddedPostgres({ dataDir, port });
  // API and worker in this process, on a PostgreSQL of their own that the test can stop
  server = await startTestServer({ DATABASE_URL: database.url, POSTHORN_RETRY_SCHEDULE: '1,2,4' });
}, 120_000);

afterAll(async () => {
  await server?.close();
  await database?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

interface Answer {
  i: number;
  status: number;
  ms: number;
  retryAfter: string | null;
  body: { id?: string; error?: string } | null;
}

describe('PostgreSQL stopped and started while requests and deliveries run', () => {
  it('answers 503 with Retry-After during the outage, recovers without a restart, and delivers everything it acknowledged', async () => {
    const account = await server.signupConfirmed();
    const key = account.project_key.key;
    await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
    server.sink.delayMs = 10;
    const before = server.sink.messages.length;

    const answers: Answer[] = [];
    const send = async (i: number) => {
      const started = Date.now();
      try {
        const res = await fetch(`${server.url}/v1/emails`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            from: FROM,
            to: `outage${i}@example.org`,
            subject: `outage ${i}`,
            text: 'x',
          }),
          signal: AbortSignal.timeout(ANSWER_BOUND_MS),
        });
        const text = await res.text();
        answers.push({
          i,
          status: res.status,
          ms: Date.now() - started,
          retryAfter: res.headers.get('retry-after'),
          body: text ? JSON.parse(text) : null,
        });
      } catch (err) {
        answers.push({
          i,
          status: 0,
          ms: Date.now() - started,
          retryAfter: null,
          body: { error: String(err) },
        });
      }
    };
    // ~10 sends a second, a few in flight: the database goes away once sends are acknowledged, comes
    // back once requests have been answered 503, and the load stops once the process serves again
    let stop = false;
    let next = 0;
    const load = Promise.all(
      Array.from({ length: 3 }, async () => {
        while (!stop) {
          await send(next++);
          await new Promise((r) => setTimeout(r, 300));
        }
      }),
    );
    const answersSince = (from: number, what: string, check: (since: Answer[]) => boolean) =>
      eventually(() => check(answers.slice(from)), { timeoutMs: 60_000, intervalMs: 100, message: what });
    await answersSince(
      0,
      'no send was acknowledged',
      (since) => since.filter((a) => a.status === 200).length >= 5,
    );
    await database?.stop();
    database = null;
    // down long enough for ten requests to be refused, from the shutdown to a socket that is gone
    await answersSince(
      answers.length,
      'fewer than ten requests saw the outage',
      (since) => since.filter((a) => a.status === 503).length >= 10,
    );
    const ready = await fetch(`${server.url}/readyz`, { signal: AbortSignal.timeout(ANSWER_BOUND_MS) });
    expect(ready.status).toBe(503);
    database = await startEmbeddedPostgres({ dataDir, port });
    await answersSince(
      answers.length,
      'the process did not serve again',
      (since) => since.length >= 5 && since.slice(-5).every((a) => a.status === 200),
    );
    stop = true;
    await load;

    const by = (status: number) => answers.filter((a) => a.status === status);
    const unexpected = answers.filter((a) => a.status !== 200 && a.status !== 503);
    expect(unexpected, JSON.stringify(unexpected.slice(0, 3))).toEqual([]);
    for (const a of by(503)) {
      expect(a.retryAfter, JSON.stringify(a)).toMatch(/^\d+$/);
      expect(a.body?.error, JSON.stringify(a)).toMatch(/database/i);
    }
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(ANSWER_BOUND_MS);
    expect(by(503).length, 'no request saw the outage').toBeGreaterThan(0);
    // served again by the same process: the last answers are acknowledgements
    const last = answers.slice(-5);
    expect(
      last.every((a) => a.status === 200),
      JSON.stringify(last),
    ).toBe(true);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);

    const acknowledged = by(200).map((a) => a.body?.id as string);
    const rows = await server.runtime.ctx.db
      .selectFrom('emails')
      .select(['id', 'message_id'])
      .where('id', 'in', acknowledged)
      .execute();
    expect(rows.length, 'an acknowledged email is not in the database').toBe(acknowledged.length);
    const messageIds = new Set(rows.map((r) => r.message_id));
    await eventually(
      () => {
        const received = new Set(server.sink.messages.slice(before).map((m) => m.parsed.messageId));
        return [...messageIds].every((id) => received.has(id));
      },
      { timeoutMs: 90_000, intervalMs: 250, message: 'an acknowledged email was not delivered' },
    );
    const received = server.sink.messages
      .slice(before)
      .map((m) => m.parsed.messageId as string)
      .filter((id) => messageIds.has(id));
    const duplicates = received.length - new Set(received).size;
    console.log(
      `database outage: ${answers.length} requests, ${acknowledged.length} acknowledged, ${by(503).length} answered 503 (slowest answer ${Math.max(...answers.map((a) => a.ms))} ms), ${new Set(received).size} delivered, 0 lost, ${duplicates} duplicates (same Message-ID)`,
    );
  }, 240_000);
});
