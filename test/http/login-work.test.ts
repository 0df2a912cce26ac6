import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PASSWORD_RESET_TASK, sendPasswordReset } from '../../src/domain/accounts/password-resets.ts';
import { LOGIN_CODE_TASK, sendLoginCode } from '../../src/domain/accounts/sessions.ts';
import {
  type SignupResult,
  signupConfirmedInDatabase,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';

/**
 * POST /api/auth/login does the same work for a known address and an unknown one (it answered a
 * known address in a median 60 ms and an unknown one in 7 ms): measured by what each request
 * writes, never by the clock. The server here runs the API only, so no worker takes the jobs while
 * the test counts them; the job's work is then run as the worker runs it.
 */

let server: TestServer;
let known: SignupResult;

beforeAll(async () => {
  server = await startTestServer({}, ['api']);
  known = await signupConfirmedInDatabase(server);
});
afterAll(() => server?.close());

/** Rows in every table a login request could write to, and the queued jobs by task. */
async function footprint() {
  const { rows } = await server.runtime.ctx.pool.query<{ what: string; n: number }>(
    `select 'codes' as what, count(*)::int as n from email_codes
     union all select 'system_emails', count(*)::int from emails where stream = 'system'
     union all select 'sessions', count(*)::int from dashboard_sessions
     union all select 'failures', count(*)::int from login_failures
     union all select 'password_resets', count(*)::int from password_resets
     union all select 'job:' || task_identifier, count(*)::int from graphile_worker.jobs group by task_identifier`,
  );
  return Object.fromEntries(rows.map((r) => [r.what, r.n]));
}

/** What one request for `email` added, table by table (rows that did not change left out). */
async function writtenBy(email: string, path = '/api/auth/login') {
  const before = await footprint();
  const res = await server.call('POST', path, { body: { email } });
  expect(res.status).toBe(200);
  const after = await footprint();
  const added = Object.fromEntries(
    Object.keys({ ...before, ...after })
      .map((k) => [k, (after[k] ?? 0) - (before[k] ?? 0)] as const)
      .filter(([, n]) => n !== 0),
  );
  return { answer: res.body, added };
}

async function queuedLoginJobs(task: string = LOGIN_CODE_TASK): Promise<{ email: string }[]> {
  const { rows } = await server.runtime.ctx.pool.query(
    `select j.payload from graphile_worker._private_jobs j
       join graphile_worker._private_tasks t on t.id = j.task_id
      where t.identifier = $1 order by j.id`,
    [task],
  );
  return rows.map((r) => r.payload);
}

describe('POST /api/auth/login', () => {
  it('writes the same for an address with an account and one without: one queued job, nothing else', async () => {
    const unknown = 'nobody-at-all@example.org';
    const forKnown = await writtenBy(known.account.email);
    const forUnknown = await writtenBy(unknown);
    expect(forKnown.added).toEqual({ [`job:${LOGIN_CODE_TASK}`]: 1 });
    expect(forUnknown.added).toEqual(forKnown.added);
    // and the same answer
    expect(forUnknown.answer).toEqual({ ...forKnown.answer, email: unknown });
    expect((await queuedLoginJobs()).slice(-2)).toEqual([{ email: known.account.email }, { email: unknown }]);
  });

  it("the job emails a code to the account's address only; an unknown address gets nothing", async () => {
    const before = await footprint();
    for (const { email } of await queuedLoginJobs()) await sendLoginCode(server.runtime.ctx, email);
    const after = await footprint();
    expect(after.codes - before.codes).toBe(1);
    expect(after.system_emails - before.system_emails).toBe(1);
    const { rows } = await server.runtime.ctx.pool.query(
      "select to_addresses, subject from emails where stream = 'system' order by created_at desc limit 1",
    );
    expect(rows[0].to_addresses).toEqual([known.account.email]);
    expect(rows[0].subject).toMatch(/login code: [A-Z0-9]{6}$/);
  });

  it('an address in another case is the same account', async () => {
    const before = await footprint();
    await sendLoginCode(server.runtime.ctx, known.account.email.toUpperCase());
    expect((await footprint()).codes - before.codes).toBe(1);
  });
});

/**
 * POST /api/auth/forgot likewise (issue 47, item 7b: it answered a known address in 14.9 ms and an
 * unknown one in 2.2 ms): every request queues one job naming the address; the job finds the
 * account, if any, and emails its link.
 */
describe('POST /api/auth/forgot', () => {
  it('writes the same for an address with an account and one without: one queued job, nothing else', async () => {
    const unknown = 'nobody-resets@example.org';
    const forKnown = await writtenBy(known.account.email, '/api/auth/forgot');
    const forUnknown = await writtenBy(unknown, '/api/auth/forgot');
    expect(forKnown.added).toEqual({ [`job:${PASSWORD_RESET_TASK}`]: 1 });
    expect(forUnknown.added).toEqual(forKnown.added);
    expect(forUnknown.answer).toEqual({ ...forKnown.answer, email: unknown });
    expect((await queuedLoginJobs(PASSWORD_RESET_TASK)).slice(-2)).toEqual([
      { email: known.account.email },
      { email: unknown },
    ]);
  });

  it("the job emails a reset link to the account's address only, one a minute", async () => {
    const before = await footprint();
    for (const { email } of await queuedLoginJobs(PASSWORD_RESET_TASK))
      await sendPasswordReset(server.runtime.ctx, email);
    await sendPasswordReset(server.runtime.ctx, known.account.email.toUpperCase());
    const after = await footprint();
    expect(after.password_resets - before.password_resets).toBe(1);
    expect(after.system_emails - before.system_emails).toBe(1);
    const { rows } = await server.runtime.ctx.pool.query(
      "select to_addresses, subject from emails where stream = 'system' order by created_at desc limit 1",
    );
    expect(rows[0].to_addresses).toEqual([known.account.email]);
    expect(rows[0].subject).toMatch(/Reset your Posthorn password/);
  });
});
