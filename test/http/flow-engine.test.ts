import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/assertions.ts';
import { sharedDkimResolver, unfoldedHeaders } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { flowWorkSettled } from '../helpers/flows.ts';
import { marketingAccount, type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import type { SinkMessage } from '../helpers/smtp-sink.ts';

const ADDRESS = 'Flow Engine Tests Ltd, 3 Mill Lane, Manchester M1 1AA';

let server: TestServer;
let account: SignupResult;
let key: string;
const active: string[] = [];
let n = 0;

/** A fresh address for each contact, so each test reads only its own messages. */
const address = (label: string) => `${label}-${++n}@flows.example`;

async function flow(body: Record<string, unknown>): Promise<any> {
  const created = await server.call('POST', '/v1/flows', { key, body });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const activated = await server.call('POST', `/v1/flows/${created.body.id}/activate`, { key });
  expect(activated.status, JSON.stringify(activated.body)).toBe(200);
  active.push(created.body.id);
  return activated.body;
}

async function contact(email: string, extra: Record<string, unknown> = {}) {
  const res = await server.call('POST', '/v1/contacts', { key, body: { email, ...extra } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

const send = (subject: string, extra: Record<string, unknown> = {}) => ({
  type: 'send',
  subject,
  html: `<p>${subject} for {{ contact.email }}</p>`,
  ...extra,
});

const messagesTo = (email: string) => server.sink.messages.filter((m) => m.to.includes(email));

async function messageTo(email: string, subject?: string): Promise<SinkMessage> {
  return eventually(
    () => {
      const found = messagesTo(email).find((m) => subject === undefined || m.parsed.subject === subject);
      if (!found) throw new Error(`messages to ${email}: ${messagesTo(email).map((m) => m.parsed.subject)}`);
      return found;
    },
    { timeoutMs: 20_000, message: `no message "${subject ?? ''}" reached ${email}` },
  );
}

async function enrollments(flowId: string, query = ''): Promise<any> {
  const res = await server.call('GET', `/v1/flows/${flowId}/enrollments${query}`, { key });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** Waits for the contact's enrollment in the flow to reach a status; returns it. */
async function enrollmentOf(flowId: string, email: string, status: string): Promise<any> {
  return eventually(
    async () => {
      const all = (await enrollments(flowId, '?limit=100')).data.filter(
        (e: any) => e.contact.email === email,
      );
      if (!all.some((e: any) => e.status === status)) throw new Error(JSON.stringify(all));
      return all.find((e: any) => e.status === status);
    },
    { timeoutMs: 20_000, message: `no ${status} enrollment of ${email} in ${flowId}` },
  );
}

async function noEnrollment(flowId: string, email: string) {
  const all = (await enrollments(flowId, '?limit=100')).data.filter((e: any) => e.contact.email === email);
  expect(all).toEqual([]);
}

const settled = () => flowWorkSettled(server);

beforeAll(async () => {
  server = await startTestServer();
  account = await marketingAccount(server, ADDRESS);
  key = account.project_key.key;
}, 60_000);
afterAll(() => server?.close());
// a flow left active would enrol the next tests' contacts too
afterEach(async () => {
  for (const id of active.splice(0)) await server.call('POST', `/v1/flows/${id}/pause`, { key });
});

describe("the spec's own example", () => {
  it('creating a contact sends the flow message (stream automation, footer, one-click unsubscribe, DKIM) and lists the enrollment', async () => {
    const created = await server.call('POST', '/v1/flows', {
      key,
      body: {
        name: 'Welcome',
        trigger: { type: 'contact_created' },
        steps: [{ type: 'send', subject: 'Welcome aboard', html: '<p>Glad you are here</p>' }],
        from_name: 'The Team',
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.id;
    expect((await server.call('POST', `/v1/flows/${id}/activate`, { key })).status).toBe(200);
    active.push(id);
    const limitsBefore = (await server.call('GET', '/v1/limits', { key })).body.sending.this_month;

    const email = address('welcome');
    const person = await contact(email);
    const message = await messageTo(email, 'Welcome aboard');

    const { parsed } = message;
    expect(parsed.headers.get('x-posthorn-stream')).toBe('automation');
    expect(String(parsed.headers.get('feedback-id'))).toBe(`automation:${id}:${account.project.id}:posthorn`);
    expect(parsed.from?.value[0]).toMatchObject({
      name: 'The Team',
      address: 'onboarding@posthorn.localhost',
    });
    expect(parsed.html).toContain('Glad you are here');
    expect(parsed.html).toContain('3 Mill Lane, Manchester M1 1AA');
    expect(parsed.text).toMatch(/Unsubscribe\W+http:\/\/\S+\/u\/[\w-]+/);
    expect(unfoldedHeaders(message.raw)).toMatch(/^List-Unsubscribe: <http:\/\/[^>]+\/u\/[\w-]+>$/m);
    expect(unfoldedHeaders(message.raw)).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click$/m);
    const { resolver } = await sharedDkimResolver(server);
    const verified = await dkimVerify(message.raw, { resolver });
    expect(verified.results[0].status.result).toBe('pass');

    const done = await enrollmentOf(id, email, 'completed');
    expect(done).toMatchObject({
      object: 'flow_enrollment',
      flow_id: id,
      version: 1,
      contact: { id: person.id, email },
      current_step: null,
      exit_reason: null,
      converted_at: null,
    });
    expect(done.finished_at).not.toBeNull();
    expect(done.history).toEqual([
      {
        step_id: 'step_1',
        type: 'send',
        at: expect.any(String),
        outcome: 'sent',
        email_id: expect.any(String),
      },
    ]);
    const one = await server.call('GET', `/v1/flows/${id}/enrollments/${done.id}`, { key });
    expect(one.status).toBe(200);
    expect(one.body).toEqual(done);

    // the message is the enrollment's email: stream, contact, tags, flow and step
    const sent = (await server.call('GET', `/v1/emails/${done.history[0].email_id}`, { key })).body;
    expect(sent).toMatchObject({ to: [email] });
    expect(sent.tags).toEqual(
      expect.arrayContaining([
        { name: 'flow', value: id },
        { name: 'step', value: 'step_1' },
      ]),
    );
    const row = await server.runtime.ctx.db
      .selectFrom('emails')
      .select(['stream', 'flow_id', 'flow_step', 'contact_id', 'message_id'])
      .where('id', '=', done.history[0].email_id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      stream: 'automation',
      flow_id: id,
      flow_step: 'step_1',
      contact_id: person.id,
    });
    expect(String(parsed.messageId)).toBe(row.message_id);
    // counted in the month's usage
    const limitsAfter = (await server.call('GET', '/v1/limits', { key })).body.sending.this_month;
    expect(limitsAfter).toBe(limitsBefore + 1);
  });
});

describe('triggers', () => {
  it('contact_created enrols only contacts subscribed to marketing', async () => {
    const f = await flow({
      name: 'Created',
      trigger: { type: 'contact_created' },
      steps: [send('Hello new')],
    });
    const out = address('optout');
    await contact(out, { subscribed: false });
    const inside = address('optin');
    await contact(inside);
    await messageTo(inside, 'Hello new');
    await settled();
    await noEnrollment(f.id, out);
    expect(messagesTo(out)).toEqual([]);
  });

  it('contact_updated enrols when the change makes its condition true', async () => {
    const f = await flow({
      name: 'Went pro',
      trigger: {
        type: 'contact_updated',
        condition: { all: [{ field: 'properties.plan', op: 'equals', value: 'pro' }] },
      },
      steps: [send('Welcome to Pro')],
    });
    const email = address('upgrader');
    await contact(email, { properties: { plan: 'free' } });
    await server.call('PATCH', `/v1/contacts/${email}`, { key, body: { properties: { seats: 2 } } });
    await settled();
    await noEnrollment(f.id, email);
    await server.call('PATCH', `/v1/contacts/${email}`, { key, body: { properties: { plan: 'pro' } } });
    await messageTo(email, 'Welcome to Pro');
    await enrollmentOf(f.id, email, 'completed');
  });

  it('event enrols on a tracked event whose properties meet the condition (purchase with value ≥ 100)', async () => {
    const f = await flow({
      name: 'Big spender',
      trigger: { type: 'event', event: 'purchase', where: [{ property: 'amount', op: 'gte', value: 100 }] },
      steps: [send('Thank you for your order')],
    });
    const small = address('small');
    const big = address('big');
    const track = (email: string, amount: number, event = 'purchase') =>
      server.call('POST', '/v1/events', { key, body: { email, event, properties: { amount } } });
    expect((await track(small, 50)).status).toBe(200);
    expect((await track(small, 500, 'refund')).status).toBe(200);
    // the event creates the contact, and enrols it in the same breath
    expect((await track(big, 150)).status).toBe(200);
    await messageTo(big, 'Thank you for your order');
    await settled();
    await noEnrollment(f.id, small);
    expect(messagesTo(small)).toEqual([]);
  });

  it("event: only the events just tracked count, not the contact's earlier ones", async () => {
    const f = await flow({
      name: 'Every big order',
      trigger: { type: 'event', event: 'order', where: [{ property: 'amount', op: 'gte', value: 100 }] },
      reentry: { policy: 'always' },
      steps: [send('Big order')],
    });
    const email = address('orders');
    const order = (amount: number) =>
      server.call('POST', '/v1/events', { key, body: { email, event: 'order', properties: { amount } } });
    const mine = async () =>
      (await enrollments(f.id, '?limit=100')).data.filter((e: any) => e.contact.email === email);
    expect((await order(200)).status).toBe(200);
    await eventually(async () => expect((await mine()).map((e: any) => e.status)).toEqual(['completed']));
    expect((await order(20)).status).toBe(200);
    await settled();
    expect(await mine()).toHaveLength(1);
    expect((await order(120)).status).toBe(200);
    await eventually(async () => expect(await mine()).toHaveLength(2));
    await eventually(() => expect(messagesTo(email)).toHaveLength(2));
  });

  it('list_joined enrols the contacts added to that list only', async () => {
    const list = (await server.call('POST', '/v1/lists', { key, body: { name: 'Beta' } })).body.id;
    const otherList = (await server.call('POST', '/v1/lists', { key, body: { name: 'Other' } })).body.id;
    const f = await flow({
      name: 'Beta welcome',
      trigger: { type: 'list_joined', list_id: list },
      steps: [send('You are in the beta')],
    });
    const joiner = address('joiner');
    const elsewhere = address('elsewhere');
    await server.call('POST', `/v1/lists/${otherList}/contacts`, { key, body: { emails: [elsewhere] } });
    const added = await server.call('POST', `/v1/lists/${list}/contacts`, {
      key,
      body: { emails: [joiner] },
    });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    await messageTo(joiner, 'You are in the beta');
    await settled();
    await noEnrollment(f.id, elsewhere);
  });

  it('segment_entered enrols a contact once a change puts it in the segment', async () => {
    const segment = await server.call('POST', '/v1/segments', {
      key,
      body: { name: 'VIPs', definition: { all: [{ field: 'properties.vip', op: 'equals', value: true }] } },
    });
    expect(segment.status).toBe(200);
    const f = await flow({
      name: 'VIP',
      trigger: { type: 'segment_entered', segment_id: segment.body.id },
      steps: [send('You are a VIP')],
    });
    const email = address('vip');
    await contact(email);
    await settled();
    await noEnrollment(f.id, email);
    await server.call('PATCH', `/v1/contacts/${email}`, { key, body: { properties: { vip: true } } });
    await messageTo(email, 'You are a VIP');
    await enrollmentOf(f.id, email, 'completed');
  });

  it('manual: POST /flows/{id}/enrollments enrols a contact by hand, refusing what it must', async () => {
    const f = await flow({ name: 'By hand', trigger: { type: 'manual' }, steps: [send('Picked by hand')] });
    const email = address('manual');
    await contact(email);
    const res = await server.call('POST', `/v1/flows/${f.id}/enrollments`, { key, body: { email } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ object: 'flow_enrollment', status: 'active', current_step: 'step_1' });
    await messageTo(email, 'Picked by hand');
    expect((await enrollmentOf(f.id, email, 'completed')).id).toBe(res.body.id);
    // the policy is "once" by default
    expectError(
      await server.call('POST', `/v1/flows/${f.id}/enrollments`, { key, body: { email } }),
      409,
      /once/,
    );
    expectError(
      await server.call('POST', `/v1/flows/${f.id}/enrollments`, {
        key,
        body: { email: 'nobody@flows.example' },
      }),
      404,
    );
    const quiet = address('quiet');
    await contact(quiet, { subscribed: false });
    expectError(
      await server.call('POST', `/v1/flows/${f.id}/enrollments`, { key, body: { email: quiet } }),
      409,
      /unsubscribed/,
    );
    expectError(await server.call('POST', `/v1/flows/${f.id}/enrollments`, { key, body: {} }), 400);
    await server.call('POST', `/v1/flows/${f.id}/pause`, { key });
    const late = address('late');
    await contact(late);
    expectError(
      await server.call('POST', `/v1/flows/${f.id}/enrollments`, { key, body: { email: late } }),
      409,
      /paused/,
    );
    // another project's flow is not found
    const other = await server.signup();
    expectError(
      await server.call('POST', `/v1/flows/${f.id}/enrollments`, {
        key: other.project_key.key,
        body: { email },
      }),
      404,
    );
  });
});

describe('re-entry', () => {
  const wait = { type: 'wait', duration_seconds: 2 };
  const enrol = (flowId: string, email: string) =>
    server.call('POST', `/v1/flows/${flowId}/enrollments`, { key, body: { email } });

  it('once: a contact enters a flow one time only, even when the trigger fires again', async () => {
    const f = await flow({
      name: 'Once',
      trigger: { type: 'contact_updated', condition: null },
      steps: [send('Once only')],
    });
    const email = address('once');
    await contact(email);
    await server.call('PATCH', `/v1/contacts/${email}`, { key, body: { first_name: 'Ann' } });
    await enrollmentOf(f.id, email, 'completed');
    await server.call('PATCH', `/v1/contacts/${email}`, { key, body: { first_name: 'Anna' } });
    await settled();
    expect((await enrollments(f.id)).data.filter((e: any) => e.contact.email === email)).toHaveLength(1);
    expect(messagesTo(email)).toHaveLength(1);
  });

  it('always: again after the last enrollment finished, never two running at once', async () => {
    const f = await flow({
      name: 'Always',
      trigger: { type: 'manual' },
      reentry: { policy: 'always' },
      steps: [wait, send('Again and again')],
    });
    const email = address('always');
    await contact(email);
    expect((await enrol(f.id, email)).status).toBe(200);
    expectError(await enrol(f.id, email), 409, /always/);
    await enrollmentOf(f.id, email, 'completed');
    expect((await enrol(f.id, email)).status).toBe(200);
    await eventually(() => expect(messagesTo(email)).toHaveLength(2), { timeoutMs: 20_000 });
  });

  it('cooldown: again only once the cooldown since the last enrollment has passed', async () => {
    const f = await flow({
      name: 'Cooldown',
      trigger: { type: 'manual' },
      reentry: { policy: 'cooldown', cooldown_seconds: 2 },
      steps: [send('Not too often')],
    });
    const email = address('cooldown');
    await contact(email);
    const first = await enrol(f.id, email);
    expect(first.status).toBe(200);
    await enrollmentOf(f.id, email, 'completed');
    expectError(await enrol(f.id, email), 409, /cooldown of 2 s/);
    const second = await eventually(
      async () => {
        const res = await enrol(f.id, email);
        expect(res.status).toBe(200);
        return res.body;
      },
      { timeoutMs: 10_000, intervalMs: 250 },
    );
    expect(Date.parse(second.created_at) - Date.parse(first.body.created_at)).toBeGreaterThanOrEqual(2_000);
    await eventually(() => expect(messagesTo(email)).toHaveLength(2), { timeoutMs: 20_000 });
  });
});

describe('enrollments', () => {
  it('lists a page with a status filter, shows one, and cancels an active one', async () => {
    const f = await flow({
      name: 'Slow',
      trigger: { type: 'manual' },
      steps: [{ type: 'wait', duration_seconds: 3600 }, send('An hour later')],
    });
    const emails = [address('e'), address('e'), address('e')];
    for (const email of emails) {
      await contact(email);
      expect(
        (await server.call('POST', `/v1/flows/${f.id}/enrollments`, { key, body: { email } })).status,
      ).toBe(200);
    }
    const waiting = await eventually(async () => {
      const page = await enrollments(f.id, '?status=active&limit=2');
      // asleep: the engine has put each at the wait, an hour ahead
      expect(page.data.every((e: any) => Date.parse(e.wake_at) - Date.parse(e.created_at) > 3_000_000)).toBe(
        true,
      );
      return page;
    });
    expect(waiting).toMatchObject({ total: 3, limit: 2, offset: 0 });
    expect(waiting.data.map((e: any) => e.contact.email)).toEqual([emails[2], emails[1]]);
    expect(
      (await enrollments(f.id, '?status=active&limit=2&offset=2')).data.map((e: any) => e.contact.email),
    ).toEqual([emails[0]]);
    const target = waiting.data[0];
    const cancel = await server.call('DELETE', `/v1/flows/${f.id}/enrollments/${target.id}`, { key });
    expect(cancel.status, JSON.stringify(cancel.body)).toBe(204);
    const cancelled = await server.call('GET', `/v1/flows/${f.id}/enrollments/${target.id}`, { key });
    expect(cancelled.body).toMatchObject({
      id: target.id,
      status: 'cancelled',
      current_step: null,
      wake_at: null,
    });
    expect(cancelled.body.history.at(-1)).toMatchObject({ step_id: 'step_1', outcome: 'cancelled' });
    expectError(
      await server.call('DELETE', `/v1/flows/${f.id}/enrollments/${target.id}`, { key }),
      409,
      /cancelled/,
    );
    expect((await enrollments(f.id, '?status=cancelled')).total).toBe(1);
    expect((await enrollments(f.id, '?status=active')).total).toBe(2);
    // by the start of the contact's address, in any case, with the status filter
    const byAddress = await enrollments(
      f.id,
      `?search=${encodeURIComponent(emails[1].slice(0, -4).toUpperCase())}`,
    );
    expect(byAddress.data.map((e: any) => e.contact.email)).toEqual([emails[1]]);
    expect(byAddress.total).toBe(1);
    expect((await enrollments(f.id, `?search=${encodeURIComponent(emails[2])}&status=cancelled`)).total).toBe(
      1,
    );
    expect((await enrollments(f.id, `?search=${encodeURIComponent(emails[2])}&status=active`)).total).toBe(0);
    expect((await enrollments(f.id, '?search=%25')).total).toBe(0);
    expectError(await server.call('GET', `/v1/flows/${f.id}/enrollments?status=gone`, { key }), 400);
    expectError(await server.call('GET', `/v1/flows/${f.id}/enrollments?limit=101`, { key }), 400);
    expectError(await server.call('GET', `/v1/flows/${f.id}/enrollments/not-an-id`, { key }), 404);
  });
});
