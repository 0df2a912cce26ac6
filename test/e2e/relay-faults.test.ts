import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded.ts';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { eventually } from '../helpers/eventually.ts';
import { signupConfirmedInDatabase, startTestServer, type TestServer } from '../helpers/server.ts';
import { type SmtpSink, startSmtpSink } from '../helpers/smtp-sink.ts';

/**
 * The relay's bad days (issue 20): down for a while, accepting a connection and then saying
 * nothing, answering 421 or 452. Each message is deferred (never bounced, never suppressed) and
 * delivered once the relay is well again, on POSTHORN_RETRY_SCHEDULE; the others keep flowing.
 * Each test counts messages acknowledged against delivered, by Message-ID.
 */

const FROM = 'Relay Test <onboarding@posthorn.localhost>';
let server: TestServer;
let relayPort: number;
let relay: SmtpSink | null = null;
let key: string;

beforeAll(async () => {
  relayPort = await freePort();
  // retries after 1, 1, 2, 2 and 3 s; a silent relay is given up on after 2 s
  server = await startTestServer({
    POSTHORN_SMTP_RELAY: `smtp://127.0.0.1:${relayPort}`,
    POSTHORN_RETRY_SCHEDULE: '1,1,2,2,3',
    POSTHORN_SMTP_RELAY_TIMEOUT: '2',
  });
  // the relay is down from the start: the account is confirmed directly, not by its emailed code
  const account = await signupConfirmedInDatabase(server);
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  key = account.project_key.key;
}, 60_000);

afterAll(async () => {
  await relay?.close();
  await server?.close();
});

async function send(to: string, subject: string): Promise<{ id: string; messageId: string }> {
  const res = await server.call('POST', '/v1/emails', { key, body: { from: FROM, to, subject, text: 'x' } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const row = await server.runtime.ctx.db
    .selectFrom('emails')
    .select('message_id')
    .where('id', '=', res.body.id)
    .executeTakeFirstOrThrow();
  return { id: res.body.id, messageId: row.message_id };
}

const statusOf = async (id: string) =>
  (
    await server.runtime.ctx.db
      .selectFrom('emails')
      .select('status')
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
  ).status;

const eventTypes = async (id: string) =>
  (
    await server.runtime.ctx.db
      .selectFrom('email_events')
      .select('type')
      .where('email_id', '=', id)
      .orderBy('id')
      .execute()
  ).map((e) => e.type);

/** Waits until every message is at the relay, then prints and checks the counts. */
async function expectDelivered(name: string, sent: { id: string; messageId: string }[]) {
  const wanted = new Set(sent.map((s) => s.messageId));
  await eventually(
    () => {
      const got = new Set((relay as SmtpSink).messages.map((m) => m.parsed.messageId));
      return [...wanted].every((id) => got.has(id));
    },
    { timeoutMs: 60_000, intervalMs: 100, message: `${name}: an acknowledged message was not delivered` },
  );
  const received = (relay as SmtpSink).messages
    .map((m) => m.parsed.messageId as string)
    .filter((id) => wanted.has(id));
  const duplicates = received.length - new Set(received).size;
  console.log(
    `${name}: ${sent.length} acknowledged, ${new Set(received).size} delivered, 0 lost, ${duplicates} duplicates (same Message-ID)`,
  );
  for (const s of sent)
    await eventually(async () => (await statusOf(s.id)) === 'sent', { timeoutMs: 10_000 });
}

describe('the relay', () => {
  it('down for a while: messages are deferred, then delivered when it is back', async () => {
    const sent: { id: string; messageId: string }[] = [];
    for (let i = 0; i < 10; i++) sent.push(await send(`down${i}@example.org`, `down ${i}`));
    await eventually(
      async () => {
        for (const s of sent) if ((await statusOf(s.id)) !== 'deferred') return false;
        return true;
      },
      {
        timeoutMs: 20_000,
        intervalMs: 100,
        message: 'the messages were not deferred while the relay was down',
      },
    );
    const suppressions = await server.call('GET', '/v1/suppressions', { key });
    expect(suppressions.body.data).toEqual([]);
    relay = await startSmtpSink({ port: relayPort });
    await expectDelivered('relay down for a while', sent);
    for (const s of sent) {
      const types = await eventTypes(s.id);
      expect(types).toContain('deferred');
      expect(types).not.toContain('bounced');
    }
  }, 90_000);

  it('accepting the connection and then silent: the attempt times out and is retried; others keep flowing', async () => {
    const sink = relay as SmtpSink;
    let hung = 0;
    sink.hang = (recipients) => recipients.includes('hang@example.org') && hung++ === 0;
    const stuck = await send('hang@example.org', 'hang');
    const others: { id: string; messageId: string }[] = [];
    for (let i = 0; i < 10; i++) others.push(await send(`flow${i}@example.org`, `flow ${i}`));
    // the others arrive while the first attempt of `hang` is still waiting for an answer
    await eventually(
      () => others.every((o) => sink.messages.some((m) => m.parsed.messageId === o.messageId)),
      {
        timeoutMs: 20_000,
        message: 'the other messages did not flow past the silent connection',
      },
    );
    expect(sink.messages.some((m) => m.parsed.messageId === stuck.messageId)).toBe(false);
    await expectDelivered('relay silent after DATA', [stuck, ...others]);
    expect(hung).toBeGreaterThanOrEqual(2);
    expect(await eventTypes(stuck.id)).toContain('deferred');
    sink.hang = undefined;
  }, 90_000);

  it('answering 421 or 452: deferred, not bounced, then delivered', async () => {
    const sink = relay as SmtpSink;
    // busy@ gets 421 until its message has been recorded deferred (a 421 closes the connection,
    // and a reused connection closed that way is tried again at once over the others, so a fixed
    // count of refusals could all be spent in one attempt); full@ gets 452 once
    let refuseBusy = true;
    let busyRefusals = 0;
    let fullRefusals = 1;
    sink.onRecipient = (address) => {
      if (address === 'busy@example.org' && refuseBusy) {
        busyRefusals++;
        return { code: 421, message: '4.3.2 Service not available, try later' };
      }
      if (address === 'full@example.org' && fullRefusals > 0) {
        fullRefusals--;
        return { code: 452, message: '4.2.2 Mailbox full' };
      }
      return undefined;
    };
    const sent = [await send('busy@example.org', 'busy'), await send('full@example.org', 'full')];
    await eventually(async () => expect(await eventTypes(sent[0].id)).toContain('deferred'), {
      timeoutMs: 30_000,
      message: 'the message refused with 421 was not recorded deferred',
    });
    refuseBusy = false;
    await expectDelivered('relay answering 421 and 452', sent);
    for (const s of sent) {
      const types = await eventTypes(s.id);
      expect(types).toContain('deferred');
      expect(types).not.toContain('bounced');
    }
    expect(busyRefusals).toBeGreaterThan(0);
    expect(fullRefusals).toBe(0);
    expect((await server.call('GET', '/v1/suppressions', { key })).body.data).toEqual([]);
    sink.onRecipient = undefined;
  }, 60_000);
});
