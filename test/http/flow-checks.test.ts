import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { STARTERS } from '../../src/domain/templates/starters.ts';
import { deliverWebhook } from '../../src/domain/webhooks/delivery-attempts.ts';
import { expectError } from '../helpers/assertions.ts';
import { eventually } from '../helpers/eventually.ts';
import { flowWorkSettled } from '../helpers/flows.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { signInByCode } from '../helpers/sessions.ts';

/**
 * Flows (issue 28): send steps are checked when saved and activated, as templates are (item 2); a
 * webhook step needs the role webhooks need, and a removed member's webhook URL receives nothing
 * more (item 4); the spec's own flow body runs with `"status": "active"`, and what needs an active
 * flow says how to activate one (item 5).
 */

const ADDRESS = 'Flow Checks Ltd, 3 Quay Street, Bristol BS1 4DB';
const NINE_MILLION = '{% for a in (1..3000) %}{% for b in (1..3000) %}{% endfor %}{% endfor %}';

let server: TestServer;
let owner: SignupResult;
let key: string;
let project: string;
let ownerToken: string;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let n = 0;

/** A real HTTP receiver on 127.0.0.1 that records the bodies it gets, by path. */
async function startReceiver() {
  const received: { url: string; body: string }[] = [];
  const http: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ url: req.url ?? '', body });
      // a path under /flaky/ is down for now: the call stays pending, to be retried
      res.writeHead(req.url?.startsWith('/flaky/') ? 503 : 200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    received,
    close: () =>
      new Promise<void>((r) => {
        http.closeAllConnections();
        http.close(() => r());
      }),
  };
}

const send = (extra: Record<string, unknown> = {}) => ({
  type: 'send',
  subject: 'Hello {{ contact.first_name }}',
  html: '<p>Hello {{ contact.first_name | default: "friend" }}</p>',
  ...extra,
});
const flowBody = (steps: unknown[], extra: Record<string, unknown> = {}) => ({
  name: `Checked ${++n}`,
  trigger: { type: 'manual' },
  steps,
  ...extra,
});
const create = (body: unknown, k = key, headers: Record<string, string> = {}) =>
  server.call('POST', '/v1/flows', { key: k, body, headers });
const patch = (id: string, body: unknown, k = key, headers: Record<string, string> = {}) =>
  server.call('PATCH', `/v1/flows/${id}`, { key: k, body, headers });
const act = (id: string, action: string, k = key, headers: Record<string, string> = {}) =>
  server.call('POST', `/v1/flows/${id}/${action}`, { key: k, headers });
const get = async (id: string) => (await server.call('GET', `/v1/flows/${id}`, { key })).body;

async function created(body: unknown, k = key, headers: Record<string, string> = {}): Promise<any> {
  const res = await create(body, k, headers);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

async function published(body: Record<string, unknown>): Promise<string> {
  const made = await server.call('POST', '/v1/templates', { key, body });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  expect((await server.call('POST', `/v1/templates/${made.body.id}/publish`, { key })).status).toBe(200);
  return made.body.id;
}

async function enrol(flowId: string, email: string, extra: Record<string, unknown> = {}) {
  const made = await server.call('POST', '/v1/contacts', { key, body: { email, ...extra } });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  return server.call('POST', `/v1/flows/${flowId}/enrollments`, { key, body: { email } });
}

async function subjectsTo(email: string, count: number): Promise<string[]> {
  return eventually(
    () => {
      const subjects = server.sink.messages
        .filter((m) => m.to.includes(email))
        .map((m) => m.parsed.subject as string);
      expect(subjects).toHaveLength(count);
      return subjects;
    },
    { timeoutMs: 30_000, message: `${count} messages never reached ${email}` },
  );
}

/** Signs in through the dashboard's code sign-in; the session token acts on /v1 as a bearer. */
const signIn = async (email: string) => (await signInByCode(server, email)).token;

/** A new account made a member of the owner's project with `role`, signed in: its session token. */
async function joined(role: 'admin' | 'member'): Promise<{ id: string; token: string }> {
  const person = await server.signupConfirmed();
  const added = await server.call('POST', `/v1/projects/${project}/members`, {
    key: owner.account_key.key,
    body: { email: person.account.email, role },
  });
  expect(added.status, JSON.stringify(added.body)).toBe(200);
  return { id: person.account.id, token: await signIn(person.account.email) };
}

/** Waits until the flow work queued so far has run, its webhook calls too. */
const settled = () => flowWorkSettled(server, { tasks: ['webhook_deliver'], timeoutMs: 30_000 });

beforeAll(async () => {
  receiver = await startReceiver();
  server = await startTestServer({ POSTHORN_WEBHOOK_ALLOW_PRIVATE: '1' });
  owner = await server.signupConfirmed();
  key = owner.project_key.key;
  project = owner.project.id;
  await setWorkspacePlan(server.runtime.ctx, owner.workspace.id, 'starter');
  expect((await server.call('PATCH', '/v1/me/footer', { key, body: { address: ADDRESS } })).status).toBe(200);
  ownerToken = await signIn(owner.account.email);
}, 60_000);
afterAll(async () => {
  await server?.close();
  await receiver?.close();
});

describe('send steps are checked when saved and activated', () => {
  it.each([
    [
      'an unknown filter',
      { html: '<p>{{ 1 | money }}</p>' },
      /^`steps\[1\]\.html` line 1, column 4: .*money/,
    ],
    [
      'a name nobody declared, with what was meant',
      { subject: 'Hi {{ frist_name }}' },
      /^`steps\[1\]\.subject` line 1, column 7: `frist_name` is not known here; did you mean `contact\.first_name`\?/,
    ],
    [
      'a file include',
      { html: "{% include '/etc/passwd' %}" },
      /^`steps\[1\]\.html` line 1, column 1: .*include/,
    ],
    [
      'a nine-million-iteration loop',
      { html: NINE_MILLION },
      /^`steps\[1\]\.html` could not be rendered with sample values/,
    ],
  ])('refuses %s at create and at edit, naming the step and field', async (_what, fields, message) => {
    const steps = (broken: Record<string, unknown>) => [
      send(),
      { type: 'wait', duration_seconds: 60 },
      send(broken),
    ];
    // the error names the step by its place in the array
    expectError(await create(flowBody([send(), send(fields)])), 400, message);
    const flow = await created(flowBody([send(), send()]));
    expectError(await patch(flow.id, { steps: [send(), send(fields)] }), 400, message);
    expect((await get(flow.id)).steps[1].subject).toBe('Hello {{ contact.first_name }}');
    expectError(
      await create(flowBody(steps(fields))),
      400,
      new RegExp(message.source.replace('steps\\[1\\]', 'steps\\[2\\]')),
    );
  });

  it('refuses at activation a definition stored before the checks existed', async () => {
    const flow = await created(flowBody([send()]));
    await server.runtime.ctx.db
      .updateTable('flow_versions')
      .set({
        definition: JSON.stringify({
          ...(await get(flow.id)),
          steps: [{ ...(await get(flow.id)).steps[0], html: '<p>{{ 1 | money }}</p>' }],
        }),
      })
      .where('flow_id', '=', flow.id)
      .execute();
    expectError(await act(flow.id, 'activate'), 400, /^`steps\[0\]\.html` line 1, column 4: .*money/);
    expect((await get(flow.id)).status).toBe('draft');
  });

  it("takes a template's variables beside template_id, refusing a required one left out", async () => {
    const template = await published({
      name: 'Order shipped',
      subject: 'Order {{ order_id }} shipped',
      html: '<p>Order {{ order_id }} is on its way, {{ contact.first_name }}</p>',
      variables: [{ name: 'order_id', type: 'string' }],
    });
    expectError(
      await create(flowBody([{ type: 'send', template_id: template }])),
      400,
      /^`steps\[0\]\.variables`: template variable `order_id` .*required/,
    );
    expectError(
      await create(flowBody([send({ variables: { order_id: 'x' } })])),
      400,
      /`steps\[0\]\.variables` go with `template_id`/,
    );
    const flow = await created(
      flowBody([{ type: 'send', template_id: template, variables: { order_id: 'B-77' } }]),
    );
    expect(flow.steps[0]).toMatchObject({ variables: { order_id: 'B-77' } });
    expect((await act(flow.id, 'activate')).status).toBe(200);
    const email = `shipped-${n}@flowchecks.example`;
    expect((await enrol(flow.id, email, { first_name: 'Ida' })).status).toBe(200);
    expect(await subjectsTo(email, 1)).toEqual(['Order B-77 shipped']);
    await act(flow.id, 'pause');
  }, 60_000);

  it('sends every starter as a flow message without an edit', async () => {
    const steps = [];
    for (const starter of STARTERS)
      steps.push({
        type: 'send',
        template_id: await published({ name: `Flow ${starter.key}`, starter: starter.key }),
      });
    const flow = await created(flowBody(steps));
    expect((await act(flow.id, 'activate')).status).toBe(200);
    const email = `starters-${n}@flowchecks.example`;
    expect((await enrol(flow.id, email, { first_name: 'Ada' })).status).toBe(200);
    expect(await subjectsTo(email, STARTERS.length)).toHaveLength(STARTERS.length);
    const enrollments = await server.call('GET', `/v1/flows/${flow.id}/enrollments`, { key });
    expect(enrollments.body.data[0]).toMatchObject({ status: 'completed' });
    await act(flow.id, 'pause');
  }, 60_000);
});

describe('webhook steps need the role webhooks need', () => {
  it('refuses a Member a flow with a webhook step on create, edit and activate, as webhooks are refused', async () => {
    const member = await joined('member');
    const as = { 'x-project-id': project };
    const url = `${receiver.base}/member`;
    const webhook = await server.call('POST', '/v1/webhooks', {
      key: member.token,
      headers: as,
      body: { url, events: ['contact.created'] },
    });
    expectError(webhook, 403, /needs the Owner or Admin role in this project; your role is Member$/);
    expectError(
      await create(flowBody([send(), { type: 'webhook', url }]), member.token, as),
      403,
      /^A `webhook` step \(`steps\[1\]`\) .* needs the Owner or Admin role in this project; your role is Member$/,
    );
    // without a webhook step a Member makes flows as before
    const plain = await created(flowBody([send()]), member.token, as);
    expectError(
      await patch(plain.id, { steps: [{ type: 'webhook', url }] }, member.token, as),
      403,
      /`steps\[0\]`/,
    );
    // the owner's flow with a webhook step: the Member can neither change nor activate it
    const owned = await created(flowBody([send(), { type: 'webhook', url }]));
    expectError(await patch(owned.id, { name: 'Mine now' }, member.token, as), 403, /your role is Member/);
    expectError(await act(owned.id, 'activate', member.token, as), 403, /your role is Member/);
    expect(await get(owned.id)).toMatchObject({ status: 'draft', name: owned.name });
  });

  it("stops calling an Admin's webhook URL once the Admin is removed: the flow is paused, saying why", async () => {
    const admin = await joined('admin');
    const as = { 'x-project-id': project };
    const url = `${receiver.base}/admin-${n}`;
    const flow = await created(
      flowBody([{ type: 'webhook', url }], { trigger: { type: 'contact_created' }, status: 'active' }),
      admin.token,
      as,
    );
    expect(flow.status).toBe('active');
    const calls = () => receiver.received.filter((r) => r.url === new URL(url).pathname);
    await server.call('POST', '/v1/contacts', { key, body: { email: `before-${n}@flowchecks.example` } });
    await eventually(() => expect(calls()).toHaveLength(1), { timeoutMs: 20_000 });

    const removed = await server.call('DELETE', `/api/projects/${project}/members/${admin.id}`, {
      key: ownerToken,
    });
    expect(removed.status, JSON.stringify(removed.body)).toBe(204);
    expect(await get(flow.id)).toMatchObject({
      status: 'paused',
      status_reason: expect.stringMatching(
        /was removed from the project.*POST \/v1\/flows\/[\w-]+\/activate/,
      ),
    });
    await server.call('POST', '/v1/contacts', { key, body: { email: `after-${n}@flowchecks.example` } });
    await settled();
    expect(calls()).toHaveLength(1);

    // an Owner who activates it again answers for its URL from then on
    const again = await act(flow.id, 'activate', ownerToken, as);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toMatchObject({ status: 'active', status_reason: null });
    await act(flow.id, 'pause');
  }, 60_000);

  it('fails the calls still waiting for a retry when the Admin is removed', async () => {
    const admin = await joined('admin');
    const as = { 'x-project-id': project };
    const url = `${receiver.base}/flaky/${n}`;
    await created(
      flowBody([{ type: 'webhook', url }], { trigger: { type: 'contact_created' }, status: 'active' }),
      admin.token,
      as,
    );
    const calls = () => receiver.received.filter((r) => r.url === new URL(url).pathname);
    await server.call('POST', '/v1/contacts', { key, body: { email: `flaky-${n}@flowchecks.example` } });
    await eventually(() => expect(calls()).toHaveLength(1), { timeoutMs: 20_000 });
    const delivery = await eventually(async () => {
      const rows = await server.runtime.ctx.db
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where(
          sql<boolean>`payload @> ${JSON.stringify({ data: { contact: { email: `flaky-${n}@flowchecks.example` } } })}::jsonb`,
        )
        .orderBy('created_at')
        .execute();
      // the first attempt failed (503); the second is its retry, due in 5 minutes
      expect(rows.map((r) => r.status)).toEqual(['failed', 'pending']);
      return rows[1];
    });
    const removed = await server.call('DELETE', `/api/projects/${project}/members/${admin.id}`, {
      key: ownerToken,
    });
    expect(removed.status, JSON.stringify(removed.body)).toBe(204);
    const after = await server.runtime.ctx.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('id', '=', delivery.id)
      .executeTakeFirstOrThrow();
    expect(after.status).toBe('failed');
    expect(after.error).toMatch(/^flow paused: .* was removed from the project$/);
    // its retry, run now, calls nobody
    await deliverWebhook(server.runtime.ctx, delivery.id);
    expect(calls()).toHaveLength(1);
  }, 60_000);

  it('pauses them too when the Admin becomes a Member', async () => {
    const admin = await joined('admin');
    const as = { 'x-project-id': project };
    const flow = await created(
      flowBody([{ type: 'webhook', url: `${receiver.base}/demoted` }], { status: 'active' }),
      admin.token,
      as,
    );
    const demoted = await server.call('PATCH', `/api/projects/${project}/members/${admin.id}`, {
      key: ownerToken,
      body: { role: 'member' },
    });
    expect(demoted.status, JSON.stringify(demoted.body)).toBe(200);
    expect(await get(flow.id)).toMatchObject({
      status: 'paused',
      status_reason: expect.stringMatching(/no longer has the Owner or Admin role/),
    });
  });

  it('pauses the flow at once when the account API takes the role away', async () => {
    const admin = await joined('admin');
    const as = { 'x-project-id': project };
    const flow = await created(
      flowBody([{ type: 'webhook', url: `${receiver.base}/account-api-${n}` }], { status: 'active' }),
      admin.token,
      as,
    );
    const member = (
      await server.call('GET', `/v1/projects/${project}/members`, { key: owner.account_key.key })
    ).body.data.find((m: { account_id: string }) => m.account_id === admin.id);
    const demoted = await server.call('POST', `/v1/projects/${project}/members`, {
      key: owner.account_key.key,
      body: { email: member.email, role: 'member' },
    });
    expect(demoted.status, JSON.stringify(demoted.body)).toBe(200);
    expect(await get(flow.id)).toMatchObject({
      status: 'paused',
      status_reason: expect.stringMatching(/no longer has the Owner or Admin role/),
    });
  }, 60_000);

  it('makes no call, and pauses the flow, when the role is gone by the time the engine runs', async () => {
    const admin = await joined('admin');
    const as = { 'x-project-id': project };
    const url = `${receiver.base}/engine-check-${n}`;
    const flow = await created(
      flowBody([{ type: 'webhook', url }], { trigger: { type: 'contact_created' }, status: 'active' }),
      admin.token,
      as,
    );
    // the role changed underneath, as by a door that does not run the membership rule: the
    // engine's own check before each call is all that stands between the flow and the URL
    await sql`update project_members set role = 'member'
               where project_id = ${project} and account_id = ${admin.id}`.execute(server.runtime.ctx.db);
    expect((await get(flow.id)).status).toBe('active');
    const email = `unhooked-${n}@flowchecks.example`;
    await server.call('POST', '/v1/contacts', { key, body: { email } });
    const enrollment = await eventually(
      async () => {
        const list = await server.call('GET', `/v1/flows/${flow.id}/enrollments`, { key });
        const e = list.body.data.find((x: any) => x.contact.email === email);
        expect(e?.history.map((h: any) => h.outcome)).toEqual(['flow_paused']);
        return e;
      },
      { timeoutMs: 20_000 },
    );
    expect(enrollment.history[0].step_id).toBe('step_1');
    expect(await get(flow.id)).toMatchObject({
      status: 'paused',
      status_reason: expect.stringMatching(/no longer has the Owner or Admin role/),
    });
    await settled();
    expect(receiver.received.filter((r) => r.url === new URL(url).pathname)).toEqual([]);
  }, 60_000);
});

describe("the spec's flow body, active in one call", () => {
  const spec = () => ({
    name: `Welcome ${++n}`,
    trigger: { type: 'contact_created' },
    steps: [{ type: 'send', subject: 'Welcome aboard', html: '<p>Glad you are here</p>' }],
    from_name: 'The Team',
  });

  it('runs at once with "status": "active": a new contact gets its message', async () => {
    const flow = await created({ ...spec(), status: 'active' });
    expect(flow).toMatchObject({ status: 'active', status_reason: null, version: 1 });
    const email = `welcome-${n}@flowchecks.example`;
    await server.call('POST', '/v1/contacts', { key, body: { email } });
    expect(await subjectsTo(email, 1)).toEqual(['Welcome aboard']);
    await act(flow.id, 'pause');
  }, 60_000);

  it('applies every activation check, creating nothing when one fails', async () => {
    const free = await server.signupConfirmed();
    const before = (await server.call('GET', '/v1/flows', { key: free.project_key.key })).body.total;
    const refused = await create({ ...spec(), status: 'active' }, free.project_key.key);
    expect(refused.status, JSON.stringify(refused.body)).toBe(402);
    expect((await server.call('GET', '/v1/flows', { key: free.project_key.key })).body.total).toBe(before);
    expectError(await create({ ...spec(), status: 'paused' }), 400, /`status`/);
  });

  it('says how to activate a draft when an enrollment needs an active flow', async () => {
    const draft = await created({ ...spec(), trigger: { type: 'manual' } });
    const res = await enrol(draft.id, `draft-${n}@flowchecks.example`);
    expectError(
      res,
      409,
      new RegExp(
        `is draft: only an active flow enrols contacts; activate it with POST /v1/flows/${draft.id}/activate \\(or create flows with "status": "active"\\)`,
      ),
    );
  });
});
