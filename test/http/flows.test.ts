import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { expectError } from '../helpers/assertions.ts';
import { insertVerifiedDomain } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let account: SignupResult;
let other: SignupResult;
let key: string;
let otherKey: string;
let list: string;
let otherList: string;
let segment: string;
let otherTopic: string;
let template: string;

const ADDRESS = 'Flow Tests Ltd, 1 Example Street, 10115 Berlin, Germany';
const SHARED = 'onboarding@posthorn.localhost';
/** The spec's own example body. */
const SPEC = {
  name: 'Welcome',
  trigger: { type: 'contact_created' },
  steps: [{ type: 'send', subject: 'Welcome aboard', html: '<p>Glad you are here</p>' }],
  from_name: 'The Team',
};
const create = (body: unknown, k = key) => server.call('POST', '/v1/flows', { key: k, body });
const patch = (id: string, body: unknown, k = key) =>
  server.call('PATCH', `/v1/flows/${id}`, { key: k, body });
const act = (id: string, action: string, k = key) =>
  server.call('POST', `/v1/flows/${id}/${action}`, { key: k });
const get = (id: string, k = key) => server.call('GET', `/v1/flows/${id}`, { key: k });

async function created(body: unknown, k = key): Promise<any> {
  const res = await create(body, k);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

beforeAll(async () => {
  server = await startTestServer();
  account = await server.signupConfirmed();
  other = await server.signup();
  key = account.project_key.key;
  otherKey = other.project_key.key;
  await insertVerifiedDomain(server, account.project.id, 'letters.example');
  list = (await server.call('POST', '/v1/lists', { key, body: { name: 'News' } })).body.id;
  otherList = (await server.call('POST', '/v1/lists', { key: otherKey, body: { name: 'Theirs' } })).body.id;
  otherTopic = (
    await server.call('POST', '/v1/topics', {
      key: otherKey,
      body: { name: 'Theirs', default_subscription: 'opt_in' },
    })
  ).body.id;
  segment = (
    await server.call('POST', '/v1/segments', {
      key,
      body: { name: 'vip', definition: { all: [{ field: 'properties.vip', op: 'equals', value: true }] } },
    })
  ).body.id;
  template = (
    await server.call('POST', '/v1/templates', {
      key,
      body: { name: 'Nudge', subject: 'A nudge', html: '<p>Hi</p>', from: 'Letters <hello@letters.example>' },
    })
  ).body.id;
  expect((await server.call('POST', `/v1/templates/${template}/publish`, { key })).status).toBe(200);
}, 60_000);
afterAll(() => server?.close());

describe('creating flows', () => {
  it("accepts the spec's own body: a draft at version 1, normalised, sent from the shared default", async () => {
    const flow = await created(SPEC);
    expect(flow).toMatchObject({
      object: 'flow',
      name: 'Welcome',
      status: 'draft',
      version: 1,
      trigger: { type: 'contact_created' },
      reentry: { policy: 'once' },
      goal: null,
      from: null,
      from_name: 'The Team',
      steps: [
        {
          id: 'step_1',
          type: 'send',
          subject: 'Welcome aboard',
          html: '<p>Glad you are here</p>',
          template_id: null,
          template_version: null,
          from: SHARED,
          from_name: 'The Team',
          next: null,
        },
      ],
      stats: { entered: 0, active: 0, completed: 0, exited: 0, converted: 0, sent: 0, opened: 0, clicked: 0 },
    });
    expect(flow.stats.steps).toEqual([
      { id: 'step_1', type: 'send', entered: 0, sent: 0, opened: 0, clicked: 0, exited: 0, skipped: 0 },
    ]);
    expect((await get(flow.id)).body).toEqual(flow);
  });

  it('accepts the rich form: every trigger and step type, goal, re-entry, templates and lists', async () => {
    const flow = await created({
      name: 'Onboarding',
      from: 'Letters <news@letters.example>',
      trigger: { type: 'event', event: 'purchase', where: [{ property: 'value', op: 'gte', value: 100 }] },
      reentry: { policy: 'cooldown', cooldown_seconds: 86_400 },
      goal: { all: [{ event: 'upgraded' }] },
      steps: [
        { id: 'hello', type: 'send', subject: 'Thanks', html: '<p>Thanks</p>' },
        { type: 'wait', duration_seconds: 3600 },
        {
          type: 'wait_for_event',
          event: 'opened_app',
          timeout_seconds: 600,
          next: 'tag',
          timeout_next: 'nudge',
        },
        { id: 'nudge', type: 'send', template_id: template, from: null },
        {
          type: 'branch',
          branches: [{ condition: { all: [{ list: list, op: 'member' }] }, next: 'hook' }],
          default_next: 'tag',
        },
        {
          id: 'tag',
          type: 'update_contact',
          set_properties: { onboarded: true },
          join_list_id: list,
          next: 'end',
        },
        { id: 'hook', type: 'webhook', url: 'https://93.184.216.34/hooks/flow' },
        { id: 'end', type: 'exit' },
      ],
    });
    expect(flow.steps.map((s: { id: string }) => s.id)).toEqual([
      'hello',
      'step_2',
      'step_3',
      'nudge',
      'step_5',
      'tag',
      'hook',
      'end',
    ]);
    expect(flow).toMatchObject({
      from: 'news@letters.example',
      from_name: 'Letters',
      reentry: { cooldown_seconds: 86_400 },
    });
    expect(flow.steps[0]).toMatchObject({
      from: 'news@letters.example',
      from_name: 'Letters',
      next: 'step_2',
    });
    // the flow's sender wins over the template's, as a campaign's does
    expect(flow.steps[3]).toMatchObject({
      template_id: template,
      subject: null,
      from: 'news@letters.example',
    });
    expect(flow.steps[6]).toMatchObject({ url: 'https://93.184.216.34/hooks/flow', next: 'end' });
    for (const trigger of [
      {
        type: 'contact_updated',
        condition: { all: [{ field: 'properties.plan', op: 'equals', value: 'pro' }] },
      },
      { type: 'list_joined', list_id: list },
      { type: 'segment_entered', segment_id: segment },
      { type: 'manual' },
    ])
      expect((await created({ ...SPEC, trigger })).trigger).toMatchObject(trigger);
  });

  it("takes a template step's sender from the template when the flow gives none", async () => {
    const flow = await created({
      ...SPEC,
      from_name: undefined,
      steps: [{ type: 'send', template_id: template }],
    });
    expect(flow.steps[0]).toMatchObject({ from: 'hello@letters.example', from_name: 'Letters' });
  });

  it('refuses every bad definition with a 400 naming the field or step', async () => {
    const step = SPEC.steps[0];
    const cases: [unknown, RegExp][] = [
      [{ ...SPEC, name: '' }, /name/],
      [{ ...SPEC, trigger: undefined }, /trigger/],
      [{ ...SPEC, trigger: { type: 'birthday' } }, /trigger\.type/],
      [{ ...SPEC, steps: [] }, /steps/],
      [{ ...SPEC, steps: [{ ...step, type: 'teleport' }] }, /steps\[0\]\.type/],
      [{ ...SPEC, steps: [step, { type: 'send', subject: 'x' }] }, /steps\[1\]. needs content/],
      [{ ...SPEC, steps: [{ ...step, next: 'nowhere' }] }, /steps\[0\]\.next.*no step "nowhere"/],
      [{ ...SPEC, steps: [{ type: 'wait', duration_seconds: 0 }] }, /steps\[0\]\.duration_seconds/],
      [{ ...SPEC, steps: [{ ...step, next: 'step_1' }] }, /endless loop/],
      [{ ...SPEC, from: 'boss@unverified.example' }, /steps\[0\]\.from.*not on a verified domain/],
      [{ ...SPEC, steps: [{ ...step, from: 'not an address' }] }, /steps\[0\]\.from/],
      [{ ...SPEC, trigger: { type: 'list_joined', list_id: otherList } }, new RegExp(`no list ${otherList}`)],
      [{ ...SPEC, trigger: { type: 'segment_entered', segment_id: randomUUID() } }, /no segment/],
      [
        { ...SPEC, goal: { all: [{ topic: otherTopic, op: 'subscribed' }] } },
        new RegExp(`no topic ${otherTopic}`),
      ],
      [
        { ...SPEC, steps: [{ type: 'send', template_id: randomUUID() }] },
        /steps\[0\]\.template_id.*no template/,
      ],
      [{ ...SPEC, steps: [{ type: 'send', template_id: template, template_version: 9 }] }, /no version 9/],
      [{ ...SPEC, steps: [{ type: 'webhook', url: 'http://93.184.216.34/' }] }, /steps\[0\]\.url.*https/],
      [
        { ...SPEC, steps: [{ type: 'webhook', url: 'https://10.0.0.1/x' }] },
        /steps\[0\]\.url.*public addresses/,
      ],
      [{ ...SPEC, goal: { all: [{ list: otherList, op: 'member' }] } }, /no list/],
      [{ ...SPEC, reentry: { policy: 'sometimes' } }, /reentry/],
    ];
    for (const [body, message] of cases) expectError(await create(body), 400, message);
    // this test server's public URL is local (as a server tried on one's own machine): as for a
    // webhook endpoint, a step may call this machine, so a receiver beside it can be tried
    const local = await create({ ...SPEC, steps: [{ type: 'webhook', url: 'http://127.0.0.1:9/hook' }] });
    expect(local.status, JSON.stringify(local.body)).toBe(200);
    const draft = await created({ ...SPEC, steps: [{ type: 'send', template_id: template }] });
    const unpublished = (
      await server.call('POST', '/v1/templates', {
        key,
        body: { name: 'Draft only', subject: 's', html: '<p>x</p>' },
      })
    ).body.id;
    expectError(
      await patch(draft.id, { steps: [{ type: 'send', template_id: unpublished }] }),
      400,
      /no published version/,
    );
  });

  it("gives 404 for another project's flow, and for ids that cannot be one", async () => {
    const theirs = await created(SPEC, otherKey);
    for (const res of [
      await get(theirs.id),
      await patch(theirs.id, { name: 'mine now' }),
      await server.call('DELETE', `/v1/flows/${theirs.id}`, { key }),
      await act(theirs.id, 'activate'),
      await act(theirs.id, 'pause'),
      await get('not-a-uuid'),
    ])
      expectError(res, 404, /Flow not found/);
    expect((await get(theirs.id, otherKey)).body.name).toBe('Welcome');
  });
});

describe('listing flows', () => {
  it('pages newest first with the enrollment counts', async () => {
    const fresh = await server.signup();
    const k = fresh.project_key.key;
    const names = ['one', 'two', 'three'];
    for (const name of names) await created({ ...SPEC, name }, k);
    const first = await server.call('GET', '/v1/flows?limit=2', { key: k });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ total: 3, limit: 2, offset: 0 });
    expect(first.body.data.map((f: { name: string }) => f.name)).toEqual(['three', 'two']);
    expect(first.body.data[0].stats).toEqual({
      entered: 0,
      active: 0,
      completed: 0,
      exited: 0,
      failed: 0,
      cancelled: 0,
      converted: 0,
    });
    expect(first.body.data[0].steps[0].id).toBe('step_1');
    const rest = await server.call('GET', '/v1/flows?limit=2&offset=2', { key: k });
    expect(rest.body.data.map((f: { name: string }) => f.name)).toEqual(['one']);
    expectError(await server.call('GET', '/v1/flows?limit=101', { key: k }), 400, /limit/);
  });
});

describe('activation and the life of a flow', () => {
  it('refuses activation without the plan feature automations: 402 with code, feature and upgrade_to', async () => {
    const flow = await created(SPEC);
    const refused = await act(flow.id, 'activate');
    expect(refused.status).toBe(402);
    expect(refused.body).toEqual({
      error:
        'The Free plan does not include automations; upgrade to Starter (starter) to use it. On this server the operator moves a workspace to another plan with `npx posthorn admin plan <workspace id or name> starter`, or starts new workspaces on one with POSTHORN_DEFAULT_PLAN',
      code: 'plan_upgrade_required',
      feature: 'automations',
      upgrade_to: 'starter',
    });
    expect((await get(flow.id)).body.status).toBe('draft');
  });

  it('refuses activation while the footer holds the placeholder address, naming the fix', async () => {
    await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'starter');
    const flow = await created(SPEC);
    expectError(await act(flow.id, 'activate'), 400, /PATCH \/v1\/me\/footer/);
    expect((await get(flow.id)).body.status).toBe('draft');
  });

  it('activates, versions edits, pauses, archives and deletes with the 409 rules', async () => {
    await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'starter');
    expect((await server.call('PATCH', '/v1/me/footer', { key, body: { address: ADDRESS } })).status).toBe(
      200,
    );
    const flow = await created({ ...SPEC, trigger: { type: 'manual' } });
    // a draft is edited in place
    const renamed = await patch(flow.id, {
      name: 'Hello',
      steps: [{ ...SPEC.steps[0], subject: 'v1 again' }],
    });
    expect(renamed.body).toMatchObject({ name: 'Hello', version: 1, steps: [{ subject: 'v1 again' }] });

    const active = await act(flow.id, 'activate');
    expect(active.status, JSON.stringify(active.body)).toBe(200);
    expect(active.body.status).toBe('active');
    expectError(await act(flow.id, 'activate'), 409, /already active/);
    expectError(await server.call('DELETE', `/v1/flows/${flow.id}`, { key }), 409, /pause it/);
    expectError(await act(flow.id, 'archive'), 409, /pause it/);

    // an active flow's edit is a new version; a rename alone is not
    const v2 = await patch(flow.id, { steps: [{ ...SPEC.steps[0], subject: 'Second' }] });
    expect(v2.body).toMatchObject({ version: 2, status: 'active', steps: [{ subject: 'Second' }] });
    expect((await patch(flow.id, { name: 'Hello again' })).body.version).toBe(2);
    expect((await get(flow.id)).body).toMatchObject({ version: 2, name: 'Hello again' });
    const versions = await server.runtime.ctx.db
      .selectFrom('flow_versions')
      .select(['version', 'definition'])
      .where('flow_id', '=', flow.id)
      .orderBy('version')
      .execute();
    expect(versions.map((v) => (v.definition as any).steps[0].subject)).toEqual(['v1 again', 'Second']);

    const paused = await act(flow.id, 'pause');
    expect(paused.body.status).toBe('paused');
    expectError(await act(flow.id, 'pause'), 409, /already paused/);
    // paused, nobody on version 2: in place
    expect((await patch(flow.id, { steps: [{ ...SPEC.steps[0], subject: 'Fixed' }] })).body.version).toBe(2);
    // once an enrollment uses version 2, an edit publishes version 3
    await enrol(flow.id, 2);
    const v3 = await patch(flow.id, { reentry: { policy: 'always' } });
    expect(v3.body).toMatchObject({
      version: 3,
      reentry: { policy: 'always' },
      steps: [{ subject: 'Fixed' }],
    });

    const archived = await act(flow.id, 'archive');
    expect(archived.body.status).toBe('archived');
    const [enrollment] = await enrollmentsOf(flow.id);
    expect(enrollment).toMatchObject({ status: 'cancelled', exit_reason: 'flow_archived' });
    expectError(await patch(flow.id, { name: 'x' }), 409, /archived/);
    expectError(await act(flow.id, 'activate'), 409, /archived/);
    expectError(await act(flow.id, 'archive'), 409, /already archived/);
    const deleted = await server.call('DELETE', `/v1/flows/${flow.id}`, { key });
    expect(deleted.status).toBe(204);
    expectError(await get(flow.id), 404);
    expect(await enrollmentsOf(flow.id)).toEqual([]);
  });

  it("moves a new flow-level sender into the send steps that had the flow's", async () => {
    const flow = await created({
      ...SPEC,
      steps: [SPEC.steps[0], { ...SPEC.steps[0], from: 'Own <own@letters.example>' }],
    });
    const moved = await patch(flow.id, { from: 'news@letters.example', from_name: 'News' });
    expect(moved.body.steps.map((s: any) => [s.from, s.from_name])).toEqual([
      ['news@letters.example', 'News'],
      ['own@letters.example', 'Own'],
    ]);
    expectError(await patch(flow.id, { from: 'x@unverified.example' }), 400, /steps\[0\]\.from/);
  });
});

async function contact(email: string): Promise<string> {
  const res = await server.call('POST', '/v1/contacts', { key, body: { email } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id;
}

/** An enrollment row as the engine writes one (the engine is tested on its own). */
async function enrol(flowId: string, version: number, fields: Record<string, unknown> = {}): Promise<string> {
  const id = randomUUID();
  await server.runtime.ctx.db
    .insertInto('flow_enrollments')
    .values({
      id,
      project_id: account.project.id,
      flow_id: flowId,
      version,
      contact_id: await contact(`${id}@readers.example`),
      step_id: 'step_1',
      wake_at: new Date(Date.now() + 3_600_000),
      ...fields,
    } as never)
    .execute();
  return id;
}

function enrollmentsOf(flowId: string) {
  return server.runtime.ctx.db
    .selectFrom('flow_enrollments')
    .selectAll()
    .where('flow_id', '=', flowId)
    .execute();
}

describe('flow stats', () => {
  it('counts enrollments, step passage, messages and human engagement per step', async () => {
    const flow = await created({
      ...SPEC,
      trigger: { type: 'manual' },
      steps: [
        { id: 'hi', type: 'send', subject: 'Hi', html: '<p>Hi</p>' },
        { id: 'pause', type: 'wait', duration_seconds: 60 },
        { id: 'bye', type: 'send', subject: 'Bye', html: '<p>Bye</p>' },
      ],
    });
    const at = new Date().toISOString();
    const passed = (ids: string[]) =>
      JSON.stringify(ids.map((step_id) => ({ step_id, type: 'x', at, outcome: 'done' })));
    const history = {
      done: passed(['hi', 'pause', 'bye']),
      waiting: passed(['hi']),
      goal: passed(['hi']),
    };
    const done = await enrol(flow.id, 1, {
      status: 'completed',
      step_id: null,
      wake_at: null,
      history: history.done,
      finished_at: new Date(),
    });
    const waiting = await enrol(flow.id, 1, { step_id: 'pause', history: history.waiting });
    const converted = await enrol(flow.id, 1, {
      status: 'exited',
      exit_reason: 'goal',
      converted_at: new Date(),
      step_id: 'pause',
      wake_at: null,
      history: history.goal,
    });
    // three messages of step `hi`, one of `bye`; one `hi` opened twice and clicked by a person,
    // another opened by a machine (not counted)
    const emails: Record<string, string> = {};
    for (const [enrollment, step] of [
      [done, 'hi'],
      [waiting, 'hi'],
      [converted, 'hi'],
      [done, 'bye'],
    ]) {
      const sent = await server.call('POST', '/v1/emails', {
        key,
        body: { from: SHARED, to: 'reader@example.com', subject: step, html: '<p>x</p>' },
      });
      expect(sent.status, JSON.stringify(sent.body)).toBe(200);
      emails[`${enrollment}/${step}`] = sent.body.id;
      await server.runtime.ctx.db
        .insertInto('flow_step_sends')
        .values({ enrollment_id: enrollment, step_id: step, email_id: sent.body.id })
        .execute();
    }
    const ids = Object.values(emails);
    await server.runtime.ctx.db
      .updateTable('emails')
      .set({ sent_at: new Date() })
      .where('id', 'in', ids.slice(0, 3))
      .execute();
    const event = (emailId: string, type: string, userAgent: string) => ({
      email_id: emailId,
      project_id: account.project.id,
      type,
      detail: JSON.stringify({ user_agent_class: userAgent }),
    });
    await server.runtime.ctx.db
      .insertInto('email_events')
      .values([
        event(emails[`${done}/hi`], 'opened', 'human'),
        event(emails[`${done}/hi`], 'opened', 'human'),
        event(emails[`${done}/hi`], 'clicked', 'human'),
        event(emails[`${waiting}/hi`], 'opened', 'proxy'),
      ] as never)
      .execute();

    const { body } = await get(flow.id);
    expect(body.stats).toMatchObject({
      entered: 3,
      active: 1,
      completed: 1,
      exited: 1,
      converted: 1,
      opened: 1,
      clicked: 1,
    });
    expect(body.stats.steps).toEqual([
      {
        id: 'hi',
        type: 'send',
        entered: 3,
        sent: expect.any(Number),
        opened: 1,
        clicked: 1,
        exited: 0,
        skipped: 0,
      },
      { id: 'pause', type: 'wait', entered: 3, sent: 0, opened: 0, clicked: 0, exited: 1, skipped: 0 },
      {
        id: 'bye',
        type: 'send',
        entered: 1,
        sent: expect.any(Number),
        opened: 0,
        clicked: 0,
        exited: 0,
        skipped: 0,
      },
    ]);
    // at least the three marked sent (the worker may have sent the fourth meanwhile)
    expect(body.stats.steps[0].sent).toBe(3);
    expect(body.stats.sent).toBe(body.stats.steps[0].sent + body.stats.steps[2].sent);
    const listed = await server.call('GET', '/v1/flows?limit=1', { key });
    expect(listed.body.data[0].stats).toMatchObject({
      entered: 3,
      active: 1,
      completed: 1,
      exited: 1,
      converted: 1,
    });
  });
});
