import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { crashTestBed, messageIdsByRecipient } from '../helpers/crash-test.ts';
import { eventually } from '../helpers/eventually.ts';

const SECRET = 'flow-crash-test-secret-0123456789abcdefgh';
const CONTACTS = 10_000;
const STEPS = ['first', 'second'];
/**
 * The worker is killed once this many step messages are written: the first step done, its messages
 * on their way, the second step midway through the engine's batches.
 */
const KILL_AFTER = 12_000;
const DOMAIN = 'crash-flows.example';

const bed = crashTestBed(SECRET);

describe(`a worker killed with SIGKILL while ${CONTACTS} enrollments pass through send steps`, () => {
  it("after a restart each enrollment has each step's message exactly once (one Message-ID per enrollment and step)", async () => {
    const { server, sink, workers, startWorker } = bed;
    const began = Date.now();
    const account = await bed.marketingAccount(DOMAIN);
    const key = account.project_key.key;
    const db = server.runtime.ctx.db;

    const created = await server.call('POST', '/v1/flows', {
      key,
      body: {
        name: 'Crash welcome',
        from: `news@${DOMAIN}`,
        from_name: 'Crash News',
        trigger: { type: 'contact_created' },
        steps: [
          { id: STEPS[0], type: 'send', subject: 'Hello {{ contact.first_name }}', html: '<p>Hello</p>' },
          { type: 'wait', duration_seconds: 1 },
          {
            id: STEPS[1],
            type: 'send',
            subject: 'Still here, {{ contact.first_name }}?',
            html: '<p>Again</p>',
          },
        ],
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const flowId: string = created.body.id;
    expect((await server.call('POST', `/v1/flows/${flowId}/activate`, { key })).status).toBe(200);
    const ofFlow = () => sink.messages.filter((m) => m.feedbackId?.includes(flowId));
    const counts = async () => {
      const { rows } = await sql<{ status: string; n: number }>`
        select status, count(*)::int as n from flow_enrollments where flow_id = ${flowId} group by status`.execute(
        db,
      );
      return Object.fromEntries(rows.map((r) => [r.status, r.n]));
    };

    const first = startWorker(sink.url);
    // the API's bulk path: one import, announced as contact.created in one job, enrolled set-based
    const rows = Array.from({ length: CONTACTS }, (_, i) => ({
      email: `reader${i + 1}@flow-crash.example`,
      first_name: `Reader ${i + 1}`,
    }));
    const imported = await server.call('POST', '/v1/contacts/import', { key, body: rows });
    expect(imported.status, JSON.stringify(imported.body)).toBe(200);
    const importAt = Date.now();
    const written = async () => {
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from flow_step_sends s join flow_enrollments e on e.id = s.enrollment_id
         where e.flow_id = ${flowId}`.execute(db);
      return rows[0].n;
    };
    await eventually(
      async () => {
        const n = await written();
        if (n < KILL_AFTER) throw new Error(`${n} step messages written`);
      },
      { timeoutMs: 120_000, intervalMs: 5, message: `fewer than ${KILL_AFTER} step messages were written` },
    );
    await workers.stop(first, 'SIGKILL');
    const beforeKill = ofFlow().length;
    const atKill = await counts();
    const writtenAtKill = await written();
    // killed midway: neither the engine nor delivery has seen the end
    expect(atKill.completed ?? 0).toBeLessThan(CONTACTS);
    expect(writtenAtKill).toBeLessThan(CONTACTS * STEPS.length);
    expect(beforeKill).toBeLessThan(CONTACTS * STEPS.length);

    const restartAt = Date.now();
    startWorker(sink.url);
    await eventually(
      async () => {
        const now = await counts();
        if (now.completed !== CONTACTS)
          throw new Error(`${JSON.stringify(now)}, ${ofFlow().length} messages received`);
        const { rows: open } = await sql<{ n: number }>`
          select count(*)::int as n from emails where flow_id = ${flowId} and status <> 'sent'`.execute(db);
        if (open[0].n > 0 || ofFlow().length < CONTACTS * STEPS.length)
          throw new Error(`${open[0].n} emails not sent yet, ${ofFlow().length} messages received`);
      },
      { timeoutMs: 240_000, intervalMs: 250, message: 'the restarted worker never finished the flow' },
    );
    const doneAt = Date.now();

    // each enrollment: one email per send step, recorded in the guard and in its history
    const sent = await sql<{ enrollment_id: string; address: string; step_id: string; message_id: string }>`
      select s.enrollment_id, c.email as address, s.step_id, m.message_id
        from flow_step_sends s join flow_enrollments e on e.id = s.enrollment_id
        join contacts c on c.id = e.contact_id join emails m on m.id = s.email_id
       where e.flow_id = ${flowId}`.execute(db);
    expect(sent.rows).toHaveLength(CONTACTS * STEPS.length);
    const emails = await sql<{ n: number; steps: number }>`
      select count(*)::int as n, count(distinct (contact_id, flow_step))::int as steps
        from emails where flow_id = ${flowId}`.execute(db);
    expect(emails.rows[0]).toEqual({ n: CONTACTS * STEPS.length, steps: CONTACTS * STEPS.length });
    const histories = await sql<{ n: number }>`
      select count(*)::int as n from flow_enrollments
       where flow_id = ${flowId}
         and (select count(*) from jsonb_array_elements(history) h where h ->> 'outcome' = 'sent') = ${STEPS.length}`.execute(
      db,
    );
    expect(histories.rows[0].n).toBe(CONTACTS);

    // the sink: every enrollment's address got exactly one Message-ID per step, the one its email has
    const messages = ofFlow();
    expect(messages.filter((m) => m.to.length !== 1)).toEqual([]);
    const { byRecipient, repeated } = messageIdsByRecipient(messages);
    expect(byRecipient.size).toBe(CONTACTS);
    const notTwo = [...byRecipient].filter(([, ids]) => ids.size !== STEPS.length);
    expect(notTwo.slice(0, 5).map(([to, ids]) => [to, [...ids]])).toEqual([]);
    const wrongId = sent.rows.filter((r) => !byRecipient.get(r.address)?.has(r.message_id));
    expect(wrongId.slice(0, 5)).toEqual([]);

    console.log(
      `flow crash: ${CONTACTS} enrollments x ${STEPS.length} sends, ${beforeKill} messages before SIGKILL ` +
        `(${((restartAt - importAt) / 1000).toFixed(1)} s after the import; enrollments then ${JSON.stringify(atKill)}, ` +
        `${writtenAtKill} step messages written), ${messages.length} received in all, ` +
        `${repeated} repeated deliveries (same Message-ID), 0 lost, 0 duplicated; finished ` +
        `${((doneAt - restartAt) / 1000).toFixed(1)} s after the restart, ${((doneAt - began) / 1000).toFixed(1)} s in all`,
    );
  }, 300_000);
});
