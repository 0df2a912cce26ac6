import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advanceFlows, nudgeAdvance } from '../../src/domain/flows/engine.ts';
import { okCall } from '../helpers/assertions.ts';
import { eventually } from '../helpers/eventually.ts';
import { marketingAccount, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * A flow batch's schedule of the next advance and an enrollment made at the same instant
 * (domain/flows/engine.ts, SCHEDULE_LOCK). The batch used to read the enrollments, then wait for the
 * enrolling transaction's hold on the `flow-advance` job, and write its own later time over that
 * transaction's nudge once it committed: the new enrollment then waited for the crontab's minute,
 * and in test/http/flow-quiet-hours.test.ts for hours (CI, stop 55). Here the worker is stopped so
 * the test makes the two meet in that order itself.
 */

let server: TestServer;
let key: string;

const call = (method: string, path: string, body?: unknown) => okCall(server, key, method, path, body);

beforeAll(async () => {
  server = await startTestServer();
  key = (await marketingAccount(server, 'Race Tests Ltd, 1 Lock Lane, York YO1 1AA')).project_key.key;
}, 60_000);
afterAll(async () => {
  await server?.close();
});

describe('the next flow advance', () => {
  it('is not put off by a batch that scheduled while an enrollment was being made', async () => {
    const { db } = server.runtime.ctx;
    for (const email of ['first@race.example', 'second@race.example'])
      await call('POST', '/v1/contacts', { email });
    const flow = await call('POST', '/v1/flows', {
      name: 'Slow start',
      trigger: { type: 'manual' },
      steps: [{ id: 'pause', type: 'wait', duration_seconds: 3_600 }],
    });
    await call('POST', `/v1/flows/${flow.id}/activate`);
    // from here on only this test advances flows
    await server.runtime.worker?.stop();
    await call('POST', `/v1/flows/${flow.id}/enrollments`, { email: 'first@race.example' });
    const first = await db
      .selectFrom('flow_enrollments')
      .select(['id', 'project_id', 'flow_id', 'version', 'step_id'])
      .executeTakeFirstOrThrow();
    const second = await db
      .selectFrom('contacts')
      .select('id')
      .where('email', '=', 'second@race.example')
      .executeTakeFirstOrThrow();

    // an enrolling transaction: the second contact's enrollment, due now, and its nudge, not yet committed
    let commit = () => {};
    let nudged = false;
    const enrolling = db.transaction().execute(async (tx) => {
      await sql`insert into flow_enrollments (id, project_id, flow_id, version, contact_id, step_id, wake_at)
                values (gen_random_uuid(), ${first.project_id}, ${first.flow_id}, ${first.version},
                        ${second.id}, ${first.step_id}, now())`.execute(tx);
      await nudgeAdvance(tx);
      nudged = true;
      await new Promise<void>((resolve) => {
        commit = resolve;
      });
    });
    // a batch advances the first contact into its hour's wait and schedules the next advance, which
    // must wait for the enrolling transaction
    await eventually(() => nudged, { message: 'the enrolling transaction' });
    const advancing = advanceFlows(server.runtime.ctx);
    try {
      await eventually(
        async () => {
          const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from pg_stat_activity
           where datname = current_database() and wait_event_type = 'Lock'`.execute(db);
          return rows[0].n > 0;
        },
        { message: 'the batch waiting for the enrolling transaction' },
      );
    } finally {
      commit();
    }
    await enrolling;
    expect(await advancing).toBe(1);

    const job = await sql<{ due: boolean }>`
      select run_at <= now() + interval '1 second' as due from graphile_worker.jobs
       where key = 'flow-advance'`.execute(db);
    expect(job.rows, 'the pending flow_advance job').toEqual([{ due: true }]);
    // and the run it stands for advances the second contact into the wait as well
    expect(await advanceFlows(server.runtime.ctx)).toBe(1);
    const waiting = await db
      .selectFrom('flow_enrollments')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('wake_at', '>', sql<Date>`now() + interval '50 minutes'`)
      .executeTakeFirstOrThrow();
    expect(waiting.n).toBe(2);
  }, 60_000);
});
