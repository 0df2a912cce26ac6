import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { pickAbWinner } from '../../src/domain/campaigns/ab.ts';
import { finishCampaign } from '../../src/domain/campaigns/send-batch.ts';
import { campaignMessages, expectError, FROM } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import type { SinkMessage } from '../helpers/smtp-sink.ts';

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';
const ADDRESS = 'Posthorn Tests Ltd, 2 High Street, Leeds LS1 1AA';

let server: TestServer;
let account: SignupResult;
let key: string;
let list: string;
const audience = Array.from({ length: 40 }, (_, i) => `reader${i}@ab.example`);

const campaign = (abTest: Record<string, unknown> | null, extra: Record<string, unknown> = {}) => ({
  name: 'Spring A/B',
  from: FROM,
  subject: 'Spring',
  html: '<html><body><p>Spring is here</p><p><a href="https://shop.example.com/">Shop</a></p></body></html>',
  list_ids: [list],
  ab_test: abTest,
  ...extra,
});
const twoSubjects = (extra: Record<string, unknown> = {}) => ({
  variants: [{ subject: 'Subject A' }, { subject: 'Subject B', html: '<p>B is <b>bold</b></p>' }],
  test_share: 50,
  winner_by: 'opens',
  wait_minutes: 60,
  ...extra,
});

async function create(body: Record<string, unknown>, k = key): Promise<string> {
  const res = await server.call('POST', '/v1/campaigns', { key: k, body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id;
}

const get = async (id: string) => (await server.call('GET', `/v1/campaigns/${id}`, { key })).body;

async function start(id: string) {
  const res = await server.call('POST', `/v1/campaigns/${id}/send`, { key });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

/** Waits until the campaign reaches an A/B phase (or a status), and gives the campaign. */
function waitFor(id: string, check: (c: any) => boolean, what: string) {
  return eventually(
    async () => {
      const c = await get(id);
      if (!check(c)) throw new Error(`${what}: status ${c.status}, ab ${JSON.stringify(c.ab)}`);
      return c;
    },
    { timeoutMs: 60_000, intervalMs: 100, message: `campaign ${id} never reached ${what}` },
  );
}

const messagesOf = (campaignId: string) => campaignMessages(server.sink.messages, campaignId);

async function waitForMessages(id: string, count: number) {
  return eventually(() => expect(messagesOf(id)).toHaveLength(count), {
    timeoutMs: 60_000,
    intervalMs: 100,
    message: `campaign ${id} never had ${count} messages in the sink`,
  });
}

/** The campaign's emails as written: subject, from and tags, by recipient. */
async function emailsOf(id: string) {
  const rows = await server.runtime.ctx.db
    .selectFrom('emails')
    .select(['to_addresses', 'subject', 'from_header', 'tags'])
    .where('campaign_id', '=', id)
    .execute();
  return rows.map((r) => ({ ...r, to: r.to_addresses[0] }));
}

const tag = (tags: { name: string; value: string }[], name: string) =>
  tags.find((t) => t.name === name)?.value;

/** Each contact of the audience got exactly one message. */
function expectOnePerContact(id: string) {
  const received = messagesOf(id).flatMap((m) => m.to);
  expect(received).toHaveLength(audience.length);
  expect(new Set(received)).toEqual(new Set(audience));
}

beforeAll(async () => {
  server = await startTestServer();
  account = await server.signupConfirmed();
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'pro');
  await server.call('PATCH', '/v1/me/footer', { key, body: { address: ADDRESS } });
  list = (await server.call('POST', '/v1/lists', { key, body: { name: 'Everyone' } })).body.id;
  const added = await server.call('POST', `/v1/lists/${list}/contacts`, { key, body: { emails: audience } });
  expect(added.status, JSON.stringify(added.body)).toBe(200);
}, 60_000);
afterAll(() => server?.close());

describe('A/B test settings', () => {
  it('refuses an A/B test on a plan without ab_testing with 402, on create and on edit', async () => {
    const other = await server.signupConfirmed();
    const k = other.project_key.key;
    await setWorkspacePlan(server.runtime.ctx, other.workspace.id, 'starter');
    const theirs = (await server.call('POST', '/v1/lists', { key: k, body: { name: 'All' } })).body.id;
    const body = { ...campaign(twoSubjects()), list_ids: [theirs] };
    const refusal = {
      error:
        'The Starter plan does not include ab testing; upgrade to Pro (pro) to use it. On this server the operator moves a workspace to another plan with `npx posthorn admin plan <workspace id or name> pro`, or starts new workspaces on one with POSTHORN_DEFAULT_PLAN',
      code: 'plan_upgrade_required',
      feature: 'ab_testing',
      upgrade_to: 'pro',
    };
    const created = await server.call('POST', '/v1/campaigns', { key: k, body });
    expect(created.status).toBe(402);
    expect(created.body).toEqual(refusal);
    const plain = await create({ ...body, ab_test: null }, k);
    const edited = await server.call('PATCH', `/v1/campaigns/${plain}`, {
      key: k,
      body: { ab_test: twoSubjects() },
    });
    expect(edited.status).toBe(402);
    expect(edited.body).toEqual(refusal);
    expect((await server.call('GET', `/v1/campaigns/${plain}`, { key: k })).body.ab_test).toBeNull();
  });

  it('checks the settings, naming the field', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [twoSubjects({ variants: [{ subject: 'Only one' }] }), /variants/],
      [twoSubjects({ variants: [{ name: 'x' }, { name: 'X' }] }), /name "x" is given twice/],
      [twoSubjects({ variants: [{ name: 'with space' }, {}] }), /variants\[0\]\.name/],
      [twoSubjects({ variants: [{}, { html: '<p>b</p>', template_id: 'x' }] }), /variants\[1\].*not both/],
      [twoSubjects({ variants: [{}, { subject: ' ' }] }), /variants\[1\]\.subject/],
      [twoSubjects({ test_share: 0 }), /test_share/],
      [twoSubjects({ wait_minutes: 20_000 }), /wait_minutes/],
      [twoSubjects({ wait_minutes: 5, wait_seconds: 5 }), /not both/],
      [twoSubjects({ winner_by: 'luck' }), /winner_by/],
    ];
    for (const [abTest, message] of cases)
      expectError(await server.call('POST', '/v1/campaigns', { key, body: campaign(abTest) }), 400, message);
    const blind = campaign(twoSubjects(), { tracking: { opens: false } });
    expectError(await server.call('POST', '/v1/campaigns', { key, body: blind }), 400, /open tracking/);
  });

  it('shows the settings completed (names A, B; the default wait) and the rate, both editable', async () => {
    const id = await create(
      campaign(
        { variants: [{}, { subject: 'B' }], test_share: 20, winner_by: 'clicks' },
        { rate: { per_second: 50 } },
      ),
    );
    const c = await get(id);
    expect(c.ab_test).toEqual({
      variants: [{ name: 'A' }, { name: 'B', subject: 'B' }],
      test_share: 20,
      winner_by: 'clicks',
      wait_minutes: 240,
    });
    expect(c.rate).toEqual({ per_second: 50, per_hour: null });
    expect(c.ab).toMatchObject({ phase: 'not_started', winner_variant: null, rest: { recipients: 0 } });
    const edited = await server.call('PATCH', `/v1/campaigns/${id}`, {
      key,
      body: { rate: { per_hour: 3600 }, ab_test: null },
    });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect(edited.body).toMatchObject({ rate: { per_second: 50, per_hour: 3600 }, ab_test: null, ab: null });
    const cleared = await server.call('PATCH', `/v1/campaigns/${id}`, { key, body: { rate: null } });
    expect(cleared.body.rate).toEqual({ per_second: null, per_hour: null });
    expectError(
      await server.call('PATCH', `/v1/campaigns/${id}`, { key, body: { rate: { per_second: 0 } } }),
      400,
      /per_second/,
    );
  });
});

describe('A/B sending', () => {
  it('sends the test, picks the winner by unique human opens and sends it to the rest; the counts add up', async () => {
    const id = await create(campaign(twoSubjects()));
    await start(id);
    const tested = await waitFor(id, (c) => c.ab?.phase === 'waiting', 'the wait');
    expect(tested.status).toBe('sending');
    expect(tested.ab.variants.map((v: any) => [v.name, v.recipients])).toEqual([
      ['A', 10],
      ['B', 10],
    ]);
    expect(tested.ab.rest).toEqual({ recipients: 20, sent: 0 });
    // the test phase wrote the test recipients only
    await waitForMessages(id, 20);
    const test = messagesOf(id);
    const bMessages = test.filter((m) => m.parsed.subject === 'Subject B');
    expect(bMessages).toHaveLength(10);
    expect(bMessages[0].parsed.html).toContain('<b>bold</b>');
    for (const e of await emailsOf(id)) {
      expect(tag(e.tags, 'campaign')).toBe(id);
      expect(tag(e.tags, 'variation')).toBe(e.subject === 'Subject B' ? 'B' : 'A');
    }

    // three people open B (one twice), one opens A: through the real pixel, a minute after sending
    await server.runtime.ctx.db
      .updateTable('emails')
      .set({ sent_at: new Date(Date.now() - 60_000) })
      .where('campaign_id', '=', id)
      .execute();
    const aMessage = test.find((m) => m.parsed.subject === 'Subject A') as SinkMessage;
    for (const m of [...bMessages.slice(0, 3), bMessages[0], aMessage]) {
      const pixel = /<img src="([^"]+\/t\/o\/[\w-]+)"/.exec(m.parsed.html as string)?.[1] as string;
      const res = await fetch(`${server.url}${new URL(pixel).pathname}`, {
        headers: { 'user-agent': CHROME },
      });
      expect(res.status).toBe(200);
    }
    // the wait is over (as if an hour had passed): the winner job's work
    await server.runtime.ctx.db
      .updateTable('campaigns')
      .set({ ab_winner_due_at: new Date() })
      .where('id', '=', id)
      .execute();
    expect(await pickAbWinner(server.runtime.ctx, id)).toBe('picked');
    expect(await pickAbWinner(server.runtime.ctx, id)).toBe('skipped');

    const done = await waitFor(id, (c) => c.status === 'sent', 'sent');
    expect(done.ab).toMatchObject({ phase: 'done', winner_variant: 1 });
    expect(done.ab.variants).toEqual([
      { index: 0, name: 'A', recipients: 10, sent: 10, opens_unique: 1, clicks_unique: 0, revenue: [] },
      { index: 1, name: 'B', recipients: 10, sent: 10, opens_unique: 3, clicks_unique: 0, revenue: [] },
    ]);
    expect(done.ab.rest).toEqual({ recipients: 20, sent: 20 });
    expect(done.stats).toMatchObject({ recipients: 40, sent: 40, opens: { unique: 4, total: 5 } });
    expectOnePerContact(id);
    const rest = messagesOf(id).filter((m) => !test.includes(m));
    expect(rest).toHaveLength(20);
    expect(rest.every((m) => m.parsed.subject === 'Subject B')).toBe(true);
    const emails = await emailsOf(id);
    expect(emails.filter((e) => tag(e.tags, 'variation') === 'B')).toHaveLength(30);
  }, 120_000);

  it('waits for the user to pick the winner, then sends the pick to the rest', async () => {
    const id = await create(
      campaign(
        {
          variants: [
            { name: 'plain' },
            { name: 'named', from_name: 'The Spring Team' },
            { name: 'question', subject: 'Ready for spring?' },
          ],
          test_share: 30,
          winner_by: 'manual',
        },
        { name: 'Manual' },
      ),
    );
    const pick = (body: unknown) => server.call('POST', `/v1/campaigns/${id}/ab/winner`, { key, body });
    expectError(await pick({ variant: 1 }), 409, /draft/);
    await start(id);
    const waiting = await waitFor(id, (c) => c.ab?.phase === 'waiting_for_pick', 'waiting for the pick');
    // 30 % of 40, four per variant
    expect(waiting.ab.variants.map((v: any) => v.recipients)).toEqual([4, 4, 4]);
    await waitForMessages(id, 12);
    // nothing marks it sent while the rest waits for the winner
    expect(await finishCampaign(server.runtime.ctx, id)).toBe(false);
    expect((await get(id)).status).toBe('sending');
    expect(await pickAbWinner(server.runtime.ctx, id)).toBe('skipped');

    expectError(await pick({ variant: 3 }), 400, /0 to 2/);
    const picked = await pick({ variant: 2 });
    expect(picked.status, JSON.stringify(picked.body)).toBe(200);
    expect(picked.body.ab).toMatchObject({ winner_variant: 2 });
    expectError(await pick({ variant: 1 }), 409, /already has its winner/);

    await waitFor(id, (c) => c.status === 'sent', 'sent');
    expectOnePerContact(id);
    const emails = await emailsOf(id);
    const count = (name: string) => emails.filter((e) => tag(e.tags, 'variation') === name).length;
    expect([count('plain'), count('named'), count('question')]).toEqual([4, 4, 32]);
    expect(emails.filter((e) => e.subject === 'Ready for spring?')).toHaveLength(32);
    expect(emails.filter((e) => e.from_header.includes('The Spring Team'))).toHaveLength(4);
  }, 120_000);

  it('sends a pure split (test share 100) to everyone with no winner phase, a variant from a template', async () => {
    const publish = async (body: Record<string, unknown>) => {
      const made = await server.call('POST', '/v1/templates', { key, body });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      await server.call('POST', `/v1/templates/${made.body.id}/publish`, { key });
      return made.body.id as string;
    };
    const split = (templateId: string) =>
      campaign(
        {
          variants: [{ name: 'inline' }, { name: 'templated', template_id: templateId }],
          test_share: 100,
          winner_by: 'clicks',
        },
        { name: 'Split' },
      );
    // a variant that could not be sent (its template needs data the variant does not give) is refused when saved
    const needy = await publish({
      name: 'Order',
      subject: 'Order {{ order_id }}',
      html: '<p>Order {{ order_id }}</p>',
      variables: [{ name: 'order_id', type: 'string' }],
    });
    expectError(
      await server.call('POST', '/v1/campaigns', { key, body: split(needy) }),
      400,
      /`ab_test\.variants\[1\]\.variables`: .*`order_id`/,
    );
    const template = {
      body: { id: await publish({ name: 'Plain', subject: 'Templated', html: '<p>From the template</p>' }) },
    };
    const id = await create(split(template.body.id));
    await start(id);
    const done = await waitFor(id, (c) => c.status === 'sent', 'sent');
    expect(done.ab).toMatchObject({ phase: 'done', winner_variant: null, rest: { recipients: 0, sent: 0 } });
    expect(done.ab.variants.map((v: any) => v.sent)).toEqual([20, 20]);
    // the version the variant sends was fixed when sending started
    expect(done.ab_test.variants[1]).toEqual({
      name: 'templated',
      template_id: template.body.id,
      template_version: 1,
    });
    expectOnePerContact(id);
    const templated = await server.runtime.ctx.db
      .selectFrom('emails')
      .select(['template_id', 'template_version', 'html'])
      .where('campaign_id', '=', id)
      .where('template_id', 'is not', null)
      .execute();
    expect(templated).toHaveLength(20);
    expect(templated.every((e) => e.template_id === template.body.id && e.template_version === 1)).toBe(true);
    const inline = messagesOf(id).filter((m) => (m.parsed.html as string).includes('Spring is here'));
    expect(inline).toHaveLength(20);
    expectError(
      await server.call('POST', `/v1/campaigns/${id}/ab/winner`, { key, body: { variant: 0 } }),
      409,
      /no winner to pick/,
    );
  }, 120_000);

  it('refuses a winner for a campaign without an A/B test', async () => {
    const id = await create(campaign(null, { name: 'Plain' }));
    expectError(
      await server.call('POST', `/v1/campaigns/${id}/ab/winner`, { key, body: { variant: 0 } }),
      409,
      /no A\/B test/,
    );
  });
});
