import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { nudgeAdvance } from '../../src/domain/flows/engine.ts';
import { eventually } from '../helpers/eventually.ts';
import { flowWorkSettled } from '../helpers/flows.ts';
import { marketingAccount, type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import type { SinkMessage } from '../helpers/smtp-sink.ts';

const ADDRESS = 'Flow Step Tests Ltd, 9 Canal Street, Birmingham B1 2AA';

let server: TestServer;
let account: SignupResult;
let key: string;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const active: string[] = [];
let n = 0;

/** A real HTTP receiver on 127.0.0.1 that records what it gets. */
async function startReceiver() {
  const received: { url: string; headers: IncomingHttpHeaders; body: string }[] = [];
  const http: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ url: req.url ?? '', headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return {
    base,
    received,
    close: () =>
      new Promise<void>((r) => {
        http.closeAllConnections();
        http.close(() => r());
      }),
  };
}

const address = (label: string) => `${label}-${++n}@steps.example`;

async function flow(body: Record<string, unknown>, k = key): Promise<any> {
  const created = await server.call('POST', '/v1/flows', {
    key: k,
    body: { trigger: { type: 'manual' }, ...body },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const activated = await server.call('POST', `/v1/flows/${created.body.id}/activate`, { key: k });
  expect(activated.status, JSON.stringify(activated.body)).toBe(200);
  if (k === key) active.push(created.body.id);
  return activated.body;
}

/** Creates the contact and enrols it by hand; returns the enrollment. */
async function enrol(
  flowId: string,
  email: string,
  extra: Record<string, unknown> = {},
  k = key,
): Promise<any> {
  const made = await server.call('POST', '/v1/contacts', { key: k, body: { email, ...extra } });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  const res = await server.call('POST', `/v1/flows/${flowId}/enrollments`, { key: k, body: { email } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

const send = (subject: string, extra: Record<string, unknown> = {}) => ({
  type: 'send',
  subject,
  html: `<p>${subject}, {{ contact.first_name | default: "friend" }}</p>`,
  ...extra,
});

const messagesTo = (email: string) => server.sink.messages.filter((m) => m.to.includes(email));
const subjectsTo = (email: string) => messagesTo(email).map((m) => m.parsed.subject);

async function messageTo(email: string, subject: string): Promise<SinkMessage> {
  return eventually(
    () => {
      const found = messagesTo(email).find((m) => m.parsed.subject === subject);
      if (!found) throw new Error(`messages to ${email}: ${subjectsTo(email)}`);
      return found;
    },
    { timeoutMs: 20_000, message: `no message "${subject}" reached ${email}` },
  );
}

async function enrollment(flowId: string, id: string, k = key): Promise<any> {
  const res = await server.call('GET', `/v1/flows/${flowId}/enrollments/${id}`, { key: k });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** Waits until the enrollment is in a state the check accepts. */
async function until(flowId: string, id: string, check: (e: any) => boolean, k = key): Promise<any> {
  return eventually(
    async () => {
      const e = await enrollment(flowId, id, k);
      if (!check(e)) throw new Error(JSON.stringify(e));
      return e;
    },
    { timeoutMs: 20_000, message: `enrollment ${id} never got there` },
  );
}

const settled = () => flowWorkSettled(server);

/** Asleep at a wait: the engine has set its wake_at past the moment it was enrolled. */
const asleep = (e: any) => e.wake_at !== null && Date.parse(e.wake_at) > Date.parse(e.created_at);
const outcomes = (e: any) => e.history.map((h: any) => `${h.step_id}:${h.outcome}`);
const ended = (status: string) => (e: any) => e.status === status;

beforeAll(async () => {
  receiver = await startReceiver();
  server = await startTestServer({ POSTHORN_WEBHOOK_ALLOW_PRIVATE: '1' });
  account = await marketingAccount(server, ADDRESS);
  key = account.project_key.key;
}, 60_000);
afterAll(async () => {
  await server?.close();
  await receiver?.close();
});
afterEach(async () => {
  for (const id of active.splice(0)) await server.call('POST', `/v1/flows/${id}/pause`, { key });
});

describe('send', () => {
  it('renders inline HTML and published templates for the contact; template emails keep version and data', async () => {
    const template = await server.call('POST', '/v1/templates', {
      key,
      body: {
        name: 'Tip',
        subject: 'A tip for {{ contact.first_name }}',
        html: '<p>Tip: {{ contact.properties.tip }}</p>',
      },
    });
    expect(template.status, JSON.stringify(template.body)).toBe(200);
    expect((await server.call('POST', `/v1/templates/${template.body.id}/publish`, { key })).status).toBe(
      200,
    );
    const f = await flow({
      name: 'Two sends',
      steps: [send('Hello {{ contact.first_name }}'), { type: 'send', template_id: template.body.id }],
    });
    const email = address('sends');
    const e = await enrol(f.id, email, { first_name: 'Rosa', properties: { tip: 'stretch' } });
    const inline = await messageTo(email, 'Hello Rosa');
    expect(inline.parsed.html).toContain('Hello Rosa, Rosa');
    const fromTemplate = await messageTo(email, 'A tip for Rosa');
    expect(fromTemplate.parsed.html).toContain('Tip: stretch');
    const done = await until(f.id, e.id, ended('completed'));
    expect(outcomes(done)).toEqual(['step_1:sent', 'step_2:sent']);
    const row = await server.runtime.ctx.db
      .selectFrom('emails')
      .select(['template_id', 'template_version', 'html', 'flow_step'])
      .where('id', '=', done.history[1].email_id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({
      template_id: template.body.id,
      template_version: 1,
      html: null,
      flow_step: 'step_2',
    });
  });
});

describe('wait', () => {
  it('sleeps for a duration, then goes on', async () => {
    const f = await flow({
      name: 'Pause',
      steps: [{ type: 'wait', duration_seconds: 1 }, send('After a second')],
    });
    const email = address('duration');
    const e = await enrol(f.id, email);
    const waiting = await until(f.id, e.id, asleep);
    expect(waiting.current_step).toBe('step_1');
    expect(Date.parse(waiting.wake_at) - Date.parse(e.created_at)).toBeGreaterThanOrEqual(1_000);
    await messageTo(email, 'After a second');
    const done = await until(f.id, e.id, ended('completed'));
    expect(outcomes(done)).toEqual(['step_1:waited', 'step_2:sent']);
    expect(Date.parse(done.history[0].at) - Date.parse(e.created_at)).toBeGreaterThanOrEqual(1_000);
  });

  it('sleeps until a moment, or until the date in a contact property (none: on at once)', async () => {
    const at = new Date(Date.now() + 2_000).toISOString();
    const byDate = await flow({ name: 'Until', steps: [{ type: 'wait', until: at }, send('At the moment')] });
    const byProperty = await flow({
      name: 'Until property',
      steps: [{ type: 'wait', until_property: 'properties.trial_ends' }, send('Trial over')],
    });
    const a = address('until');
    const b = address('trial');
    const c = address('notrial');
    const ea = await enrol(byDate.id, a);
    const trialEnds = new Date(Date.now() + 1_500).toISOString();
    const eb = await enrol(byProperty.id, b, { properties: { trial_ends: trialEnds } });
    const ec = await enrol(byProperty.id, c);
    expect((await until(byDate.id, ea.id, asleep)).wake_at).toBe(at);
    expect((await until(byProperty.id, eb.id, asleep)).wake_at).toBe(trialEnds);
    await messageTo(a, 'At the moment');
    await messageTo(b, 'Trial over');
    await messageTo(c, 'Trial over');
    expect(outcomes(await until(byProperty.id, ec.id, ended('completed')))).toEqual([
      'step_1:no_date',
      'step_2:sent',
    ]);
    expect(outcomes(await until(byProperty.id, eb.id, ended('completed')))).toEqual([
      'step_1:waited',
      'step_2:sent',
    ]);
  });

  it("waits for a time-of-day window in the contact's time zone (UTC when unknown)", async () => {
    const tokyoHour = ((Date.now() / 3_600_000 + 9) % 24) | 0;
    const from = (tokyoHour + 3) % 24;
    const later = await flow({
      name: 'Window',
      steps: [{ type: 'wait', window: { from_hour: from, to_hour: from + 1 } }, send('In the window')],
    });
    const inside = await flow({
      name: 'Window now',
      steps: [
        {
          type: 'wait',
          window: { from_hour: Math.max(0, tokyoHour - 1), to_hour: Math.min(24, tokyoHour + 2) },
        },
        send('Right away'),
      ],
    });
    const waiting = address('tokyo');
    const now = address('tokyo');
    const e = await enrol(later.id, waiting, { properties: { timezone: 'Asia/Tokyo' } });
    await enrol(inside.id, now, { properties: { timezone: 'Asia/Tokyo' } });
    // the next moment Tokyo (UTC+9, no daylight saving) reaches `from` o'clock
    const next = [0, 1, 2]
      .map((d) => {
        const t = new Date();
        return Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate() + d, (from + 15) % 24);
      })
      .find((t) => t > Date.now());
    expect((await until(later.id, e.id, asleep)).wake_at).toBe(new Date(next as number).toISOString());
    await messageTo(now, 'Right away');
    // an unknown zone counts as UTC
    const utc = address('nowhere');
    const u = await enrol(later.id, utc, { properties: { timezone: 'Mars/Olympus' } });
    const utcFrom = (await until(later.id, u.id, asleep)).wake_at;
    expect(new Date(utcFrom).getUTCHours()).toBe(from);
    expect(messagesTo(waiting)).toEqual([]);
  });
});

describe('wait_for_event', () => {
  it('goes on by the event edge when a matching event comes in time, by the timeout edge otherwise', async () => {
    const f = await flow({
      name: 'Activation',
      steps: [
        {
          type: 'wait_for_event',
          event: 'activated',
          where: [{ property: 'via', op: 'equals', value: 'app' }],
          timeout_seconds: 2,
          next: 'thanks',
          timeout_next: 'nudge',
        },
        { id: 'thanks', ...send('Thanks for activating'), next: null },
        { id: 'nudge', ...send('Still there?') },
      ],
    });
    const track = (email: string, via: string) =>
      server.call('POST', '/v1/events', { key, body: { email, event: 'activated', properties: { via } } });
    const quick = address('quick');
    const early = address('early');
    const elsewhere = address('web');
    // an event before the wait began does not count
    const earlyContact = await server.call('POST', '/v1/contacts', { key, body: { email: early } });
    expect((await track(early, 'app')).status).toBe(200);
    const ee = (await server.call('POST', `/v1/flows/${f.id}/enrollments`, { key, body: { email: early } }))
      .body;
    expect(earlyContact.status).toBe(200);
    const eq = await enrol(f.id, quick);
    const ew = await enrol(f.id, elsewhere);
    await until(f.id, eq.id, asleep);
    expect((await track(quick, 'app')).status).toBe(200);
    expect((await track(elsewhere, 'web')).status).toBe(200);

    await messageTo(quick, 'Thanks for activating');
    await messageTo(elsewhere, 'Still there?');
    await messageTo(early, 'Still there?');
    expect(outcomes(await until(f.id, eq.id, ended('completed')))).toEqual(['step_1:event', 'thanks:sent']);
    expect(outcomes(await until(f.id, ew.id, ended('completed')))).toEqual(['step_1:timeout', 'nudge:sent']);
    expect(outcomes(await until(f.id, ee.id, ended('completed')))).toEqual(['step_1:timeout', 'nudge:sent']);
    expect(subjectsTo(quick)).toEqual(['Thanks for activating']);
  });
});

describe('branch, update_contact and exit', () => {
  it('takes the first branch whose condition holds, else the default', async () => {
    const f = await flow({
      name: 'Tiers',
      steps: [
        {
          type: 'branch',
          branches: [
            { condition: { all: [{ field: 'properties.tier', op: 'equals', value: 'gold' }] }, next: 'gold' },
            { condition: { all: [{ event: 'purchase' }] }, next: 'buyer' },
          ],
          default_next: 'plain',
        },
        { id: 'gold', ...send('Gold news'), next: null },
        { id: 'buyer', ...send('Buyer news'), next: null },
        { id: 'plain', ...send('Plain news') },
      ],
    });
    const gold = address('gold');
    const buyer = address('buyer');
    const plain = address('plain');
    const eg = await enrol(f.id, gold, { properties: { tier: 'gold' } });
    expect(
      (await server.call('POST', '/v1/events', { key, body: { email: buyer, event: 'purchase' } })).status,
    ).toBe(200);
    const eb = (await server.call('POST', `/v1/flows/${f.id}/enrollments`, { key, body: { email: buyer } }))
      .body;
    const ep = await enrol(f.id, plain);
    await messageTo(gold, 'Gold news');
    await messageTo(buyer, 'Buyer news');
    await messageTo(plain, 'Plain news');
    expect(outcomes(await until(f.id, eg.id, ended('completed')))).toEqual(['step_1:branch_0', 'gold:sent']);
    expect(outcomes(await until(f.id, eb.id, ended('completed')))).toEqual(['step_1:branch_1', 'buyer:sent']);
    expect(outcomes(await until(f.id, ep.id, ended('completed')))).toEqual(['step_1:default', 'plain:sent']);
  });

  it('updates the contact (properties merged, a list joined and one left), which later steps see, then exits', async () => {
    const join = (await server.call('POST', '/v1/lists', { key, body: { name: 'Onboarded' } })).body.id;
    const leave = (await server.call('POST', '/v1/lists', { key, body: { name: 'Trial' } })).body.id;
    const f = await flow({
      name: 'Onboard',
      steps: [
        {
          type: 'update_contact',
          set_properties: { stage: 'onboarded', temp: null },
          join_list_id: join,
          leave_list_id: leave,
        },
        {
          type: 'branch',
          branches: [
            {
              condition: {
                all: [
                  { field: 'properties.stage', op: 'equals', value: 'onboarded' },
                  { list: join, op: 'member' },
                ],
              },
              next: 'out',
            },
          ],
          default_next: 'never',
        },
        { id: 'never', ...send('Should not be sent') },
        { id: 'out', type: 'exit' },
      ],
    });
    const email = address('onboard');
    await server.call('POST', '/v1/contacts', { key, body: { email, properties: { temp: 1, keep: 'yes' } } });
    await server.call('POST', `/v1/lists/${leave}/contacts`, { key, body: { emails: [email] } });
    const e = (await server.call('POST', `/v1/flows/${f.id}/enrollments`, { key, body: { email } })).body;
    const done = await until(f.id, e.id, ended('exited'));
    expect(done.exit_reason).toBe('exit_step');
    expect(outcomes(done)).toEqual(['step_1:updated', 'step_2:branch_0', 'out:exited']);
    const person = (await server.call('GET', `/v1/contacts/${email}`, { key })).body;
    expect(person.properties).toEqual({ keep: 'yes', stage: 'onboarded' });
    expect(person.lists).toEqual([join]);
    expect(messagesTo(email)).toEqual([]);
  });
});

describe('webhook', () => {
  it("posts a signed flow.step call through the project's endpoint for the URL (registered when missing)", async () => {
    const known = `${receiver.base}/known`;
    const endpoint = await server.call('POST', '/v1/webhooks', {
      key,
      body: { url: known, events: ['email.received'] },
    });
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(200);
    const fresh = `${receiver.base}/fresh`;
    const f = await flow({
      name: 'Hooks',
      steps: [
        { type: 'webhook', url: known },
        { type: 'webhook', url: fresh },
      ],
    });
    const email = address('hook');
    const e = await enrol(f.id, email, { first_name: 'Ida' });
    const got = await eventually(() => {
      const calls = receiver.received.filter((r) => r.body.includes(e.id));
      expect(calls.map((c) => c.url).sort()).toEqual(['/fresh', '/known']);
      return calls;
    });
    const call = got.find((c) => c.url === '/known') as (typeof got)[number];
    const headers = {
      'webhook-id': String(call.headers['webhook-id']),
      'webhook-timestamp': String(call.headers['webhook-timestamp']),
      'webhook-signature': String(call.headers['webhook-signature']),
    };
    expect(new Webhook(endpoint.body.secret).verify(call.body, headers)).toMatchObject({
      type: 'flow.step',
      data: { flow_id: f.id, step_id: 'step_1', enrollment_id: e.id, contact: { email, first_name: 'Ida' } },
    });
    expect(outcomes(await until(f.id, e.id, ended('completed')))).toEqual(['step_1:queued', 'step_2:queued']);
    const endpoints = (await server.call('GET', '/v1/webhooks', { key })).body.data;
    const registered = endpoints.find((w: any) => w.url === fresh);
    expect(registered).toMatchObject({ events: [], enabled: true });
    const deliveries = await server.call('GET', `/v1/webhooks/${registered.id}/deliveries`, { key });
    expect(deliveries.body.data).toMatchObject([{ event_type: 'flow.step', status: 'succeeded' }]);
  });
});

describe('leaving a flow', () => {
  const slow = (name: string, extra: Record<string, unknown> = {}, seconds = 2) =>
    flow({
      name,
      steps: [send(`${name} one`), { type: 'wait', duration_seconds: seconds }, send(`${name} two`)],
      ...extra,
    });

  async function emailsOf(enrollmentId: string) {
    return server.runtime.ctx.db
      .selectFrom('flow_step_sends')
      .select('step_id')
      .where('enrollment_id', '=', enrollmentId)
      .execute();
  }

  it('a goal met ends the enrollment as a conversion wherever it is', async () => {
    const f = await slow('Goal', { goal: { all: [{ event: 'purchase' }] } }, 60);
    const email = address('goal');
    const purchase = () => server.call('POST', '/v1/events', { key, body: { email, event: 'purchase' } });
    // a purchase made before entering the flow is no conversion, whatever happens to the contact later
    expect((await purchase()).status).toBe(200);
    const e = (await server.call('POST', `/v1/flows/${f.id}/enrollments`, { key, body: { email } })).body;
    await messageTo(email, 'Goal one');
    await server.call('PATCH', `/v1/contacts/${email}`, { key, body: { first_name: 'Gil' } });
    await settled();
    expect((await until(f.id, e.id, asleep)).status).toBe('active');
    expect((await purchase()).status).toBe(200);
    const done = await until(f.id, e.id, ended('exited'));
    expect(done.exit_reason).toBe('goal');
    expect(done.converted_at).not.toBeNull();
    expect(done.history.at(-1)).toMatchObject({ step_id: 'step_2', outcome: 'converted' });
    const stats = (await server.call('GET', `/v1/flows/${f.id}`, { key })).body.stats;
    expect(stats).toMatchObject({ entered: 1, converted: 1, exited: 1 });
    expect(subjectsTo(email)).toEqual(['Goal one']);
    expect(await emailsOf(e.id)).toEqual([{ step_id: 'step_1' }]);
  });

  it('an unsubscribe in the middle ends the enrollment: nothing more is sent', async () => {
    const f = await slow('Unsub');
    const email = address('unsub');
    const e = await enrol(f.id, email);
    // enrolled after it, so its wait ends later: once its second message is out, the engine has
    // passed the end of the unsubscribed contact's wait too
    const later = address('unsub-later');
    await enrol(f.id, later);
    await messageTo(email, 'Unsub one');
    const patched = await server.call('PATCH', `/v1/contacts/${email}`, { key, body: { subscribed: false } });
    expect(patched.status).toBe(200);
    const done = await until(f.id, e.id, ended('exited'));
    expect(done.exit_reason).toBe('unsubscribed');
    await messageTo(later, 'Unsub two');
    expect(subjectsTo(email)).toEqual(['Unsub one']);
    expect(await emailsOf(e.id)).toEqual([{ step_id: 'step_1' }]);
  });

  it('a contact suppressed meanwhile exits before the next send', async () => {
    const f = await slow('Supp');
    const email = address('supp');
    const e = await enrol(f.id, email);
    await messageTo(email, 'Supp one');
    expect((await server.call('POST', '/v1/suppressions', { key, body: { email } })).status).toBe(200);
    const done = await until(f.id, e.id, ended('exited'));
    expect(done.exit_reason).toBe('suppressed');
    expect(outcomes(done)).toEqual(['step_1:sent', 'step_2:waited', 'step_3:suppressed']);
    expect(subjectsTo(email)).toEqual(['Supp one']);
  });
});

describe('the engine', () => {
  it('leaves the enrollments of a paused flow where they are, and goes on once it is active again', async () => {
    const f = await flow({
      name: 'Paused',
      steps: [{ type: 'wait', duration_seconds: 1 }, send('After the pause')],
    });
    const email = address('paused');
    const e = await enrol(f.id, email);
    await until(f.id, e.id, asleep);
    expect((await server.call('POST', `/v1/flows/${f.id}/pause`, { key })).status).toBe(200);
    // the same wait in an active flow, entered after the pause: once its message is out, the engine
    // has passed the end of the paused enrollment's wait
    const other = await flow({
      name: 'Not paused',
      steps: [{ type: 'wait', duration_seconds: 1 }, send('Not paused')],
    });
    const otherEmail = address('not-paused');
    await enrol(other.id, otherEmail);
    await messageTo(otherEmail, 'Not paused');
    const still = await enrollment(f.id, e.id);
    expect(still).toMatchObject({ status: 'active', current_step: 'step_1', history: [] });
    expect((await server.call('POST', `/v1/flows/${f.id}/activate`, { key })).status).toBe(200);
    // the crontab would pick it up within a minute; a nudge does it now
    await nudgeAdvance(server.runtime.ctx.db);
    await messageTo(email, 'After the pause');
  });

  it('leaves a send over the monthly allowance waiting an hour, logged once', async () => {
    const other = await server.signupConfirmed();
    const k = other.project_key.key;
    await setWorkspacePlan(server.runtime.ctx, other.workspace.id, 'starter');
    expect((await server.call('PATCH', '/v1/me/footer', { key: k, body: { address: ADDRESS } })).status).toBe(
      200,
    );
    const f = await flow({ name: 'Capped', steps: [send('Over the cap')] }, k);
    // the Free plan's 3,000 a month, used up
    await setWorkspacePlan(server.runtime.ctx, other.workspace.id, 'free');
    await sql`insert into sending_usage (project_id, day, shard, sent, shared_domain_sent)
              values (${other.project.id}, current_date, 0, 3000, 0)`.execute(server.runtime.ctx.db);
    const email = address('capped');
    const e = await enrol(f.id, email, {}, k);
    const waiting = await until(f.id, e.id, (x) => x.history.length > 0, k);
    expect(waiting).toMatchObject({ status: 'active', current_step: 'step_1' });
    expect(outcomes(waiting)).toEqual(['step_1:over_allowance']);
    expect(Date.parse(waiting.wake_at) - Date.now()).toBeGreaterThan(50 * 60_000);
    expect(messagesTo(email)).toEqual([]);
    await server.call('POST', `/v1/flows/${f.id}/pause`, { key: k });
  });
});
