import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { snapshotAudience } from '../../src/domain/campaigns/audience.ts';
import { suppress } from '../../src/domain/emails/suppressions.ts';
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
let otherSegment: string;

const FROM = 'news@letters.example';
const draft = (extra: Record<string, unknown> = {}) => ({
  name: 'Spring news',
  from: FROM,
  subject: 'What is new',
  html: '<p>Hello {{ contact.first_name }}</p>',
  ...extra,
});
const create = (body: Record<string, unknown>, k = key) =>
  server.call('POST', '/v1/campaigns', { key: k, body });

beforeAll(async () => {
  server = await startTestServer({}, ['api']);
  account = await server.signup();
  other = await server.signup();
  key = account.project_key.key;
  otherKey = other.project_key.key;
  await insertVerifiedDomain(server, account.project.id, 'letters.example');
  list = (await server.call('POST', '/v1/lists', { key, body: { name: 'News' } })).body.id;
  otherList = (await server.call('POST', '/v1/lists', { key: otherKey, body: { name: 'Theirs' } })).body.id;
  otherSegment = (
    await server.call('POST', '/v1/segments', {
      key: otherKey,
      body: {
        name: 'theirs',
        definition: { all: [{ field: 'properties.plan', op: 'equals', value: 'pro' }] },
      },
    })
  ).body.id;
}, 60_000);
afterAll(() => server?.close());

describe('campaign drafts', () => {
  it('creates, reads, edits and deletes a campaign', async () => {
    const created = await create(
      draft({ from_name: 'The Team', list_ids: [list], tags: [{ name: 'kind', value: 'news' }] }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toMatchObject({
      object: 'campaign',
      name: 'Spring news',
      status: 'draft',
      from: FROM,
      from_name: 'The Team',
      subject: 'What is new',
      template_id: null,
      list_ids: [list],
      segment_ids: [],
      tracking: { opens: true, clicks: true },
      tags: [{ name: 'kind', value: 'news' }],
      recipient_count: null,
    });
    const id = created.body.id;
    expect((await server.call('GET', `/v1/campaigns/${id}`, { key })).body).toEqual(created.body);

    const edited = await server.call('PATCH', `/v1/campaigns/${id}`, {
      key,
      body: { subject: 'Spring is here', tracking: { clicks: false } },
    });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect(edited.body).toMatchObject({
      subject: 'Spring is here',
      html: created.body.html,
      list_ids: [list],
      tracking: { opens: true, clicks: false },
    });

    expect((await server.call('DELETE', `/v1/campaigns/${id}`, { key })).status).toBe(204);
    expectError(await server.call('GET', `/v1/campaigns/${id}`, { key }), 404);
  });

  it('lists campaigns newest first, paginated', async () => {
    const fresh = await server.signup();
    const k = fresh.project_key.key;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await create(draft({ name: `c${i}`, from: 'onboarding@posthorn.localhost' }), k);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      ids.push(res.body.id);
    }
    const first = await server.call('GET', '/v1/campaigns?limit=2', { key: k });
    expect(first.body).toMatchObject({ total: 5, limit: 2, offset: 0 });
    expect(first.body.data.map((c: { id: string }) => c.id)).toEqual([ids[4], ids[3]]);
    const last = await server.call('GET', '/v1/campaigns?limit=2&offset=4', { key: k });
    expect(last.body.data.map((c: { id: string }) => c.id)).toEqual([ids[0]]);
    expectError(await server.call('GET', '/v1/campaigns?limit=101', { key: k }), 400);
  });

  it('ignores unknown fields', async () => {
    const res = await create(draft({ colour: 'green', status: 'sent', recipient_count: 7 }));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.colour).toBeUndefined();
    expect(res.body.status).toBe('draft');
    expect(res.body.recipient_count).toBeNull();
  });

  it('refuses a `from` that is not on a verified domain of the project', async () => {
    expectError(
      await create(draft({ from: 'me@unverified.example' })),
      400,
      /`from` me@unverified\.example is not on a verified domain/,
    );
  });

  it('refuses a list or segment of another project, and an unknown list', async () => {
    expectError(
      await create(draft({ list_ids: [otherList] })),
      400,
      new RegExp(`no list ${otherList} in this project`),
    );
    expectError(
      await create(draft({ segment_ids: [otherSegment] })),
      400,
      new RegExp(`no segment ${otherSegment} in this project`),
    );
    const unknown = '0b1b6a2e-5d3c-4c56-9a43-2f8b1d7e6c11';
    expectError(await create(draft({ exclude_list_ids: [unknown] })), 400, new RegExp(`no list ${unknown}`));
    expectError(await create(draft({ list_ids: ['not-an-id'] })), 400, /no list not-an-id/);
  });

  it('refuses both a template and inline HTML, and no content at all', async () => {
    const template = await server.call('POST', '/v1/templates', {
      key,
      body: { name: 'News', starter: 'newsletter' },
    });
    expect(template.status, JSON.stringify(template.body)).toBe(200);
    expectError(
      await create(draft({ template_id: template.body.id })),
      400,
      /`template_id` or `html`, not both/,
    );
    expectError(await create(draft({ html: undefined })), 400, /content/);
    // a template gives the subject, but only a published one can be sent
    expectError(
      await create(draft({ html: undefined, subject: undefined, template_id: template.body.id })),
      400,
      /no published version/,
    );
    await server.call('POST', `/v1/templates/${template.body.id}/publish`, { key });
    const ok = await create(draft({ html: undefined, subject: undefined, template_id: template.body.id }));
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toMatchObject({
      template_id: template.body.id,
      template_version: null,
      html: null,
      subject: null,
    });
    expectError(await create(draft({ subject: undefined })), 400, /`subject` is required/);
    expectError(await create(draft({ name: '' })), 400, /name/);
  });

  it('answers 404 for a campaign of another project', async () => {
    const mine = (await create(draft())).body.id;
    expectError(await server.call('GET', `/v1/campaigns/${mine}`, { key: otherKey }), 404);
    expectError(
      await server.call('PATCH', `/v1/campaigns/${mine}`, { key: otherKey, body: { name: 'x' } }),
      404,
    );
    expectError(await server.call('DELETE', `/v1/campaigns/${mine}`, { key: otherKey }), 404);
    expectError(await server.call('GET', `/v1/campaigns/${mine}/audience`, { key: otherKey }), 404);
    expect((await server.call('GET', `/v1/campaigns/${mine}`, { key })).status).toBe(200);
  });

  it('refuses edits once sending has started (409), and deleting while sending', async () => {
    const id = (await create(draft())).body.id;
    await server.runtime.ctx.db
      .updateTable('campaigns')
      .set({ status: 'sending' })
      .where('id', '=', id)
      .execute();
    expectError(
      await server.call('PATCH', `/v1/campaigns/${id}`, { key, body: { subject: 'Late' } }),
      409,
      /sending/,
    );
    expectError(await server.call('DELETE', `/v1/campaigns/${id}`, { key }), 409, /sending/);
    await server.runtime.ctx.db
      .updateTable('campaigns')
      .set({ status: 'sent' })
      .where('id', '=', id)
      .execute();
    expectError(await server.call('PATCH', `/v1/campaigns/${id}`, { key, body: { subject: 'Late' } }), 409);
    expect((await server.call('DELETE', `/v1/campaigns/${id}`, { key })).status).toBe(204);
  });
});

interface Person {
  email: string;
  id?: string;
  inList?: boolean;
  pro?: boolean;
  unsubscribed?: boolean;
  listUnsubscribed?: boolean;
  suppressed?: 'hard_bounce' | 'complaint' | 'unsubscribe' | 'manual';
  excluded?: boolean;
}

describe('the audience snapshot', () => {
  it('holds exactly the subscribed, unsuppressed contacts of the lists and segments, each once', async () => {
    const fresh = await server.signup();
    const k = fresh.project_key.key;
    const call = (method: string, path: string, body?: unknown) =>
      server.call(method, path, { key: k, body });
    const people: Person[] = [
      { email: 'list-only@a.test', inList: true },
      { email: 'segment-only@a.test', pro: true },
      { email: 'both@a.test', inList: true, pro: true },
      { email: 'unsub-list@a.test', inList: true, unsubscribed: true },
      { email: 'unsub-segment@a.test', pro: true, unsubscribed: true },
      { email: 'bounced@a.test', inList: true, suppressed: 'hard_bounce' },
      { email: 'complained@a.test', pro: true, suppressed: 'complaint' },
      { email: 'unsubscribed-address@a.test', inList: true, pro: true, suppressed: 'unsubscribe' },
      { email: 'manual@a.test', inList: true, suppressed: 'manual' },
      { email: 'left-list@a.test', inList: true, listUnsubscribed: true },
      { email: 'left-list-but-pro@a.test', inList: true, listUnsubscribed: true, pro: true },
      { email: 'excluded@a.test', inList: true, pro: true, excluded: true },
      { email: 'outsider@a.test' },
    ];
    for (const p of people) {
      const res = await call('POST', '/v1/contacts', {
        email: p.email,
        properties: { plan: p.pro ? 'pro' : 'free' },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      p.id = res.body.id;
    }
    const news = (await call('POST', '/v1/lists', { name: 'News' })).body.id;
    const vips = (await call('POST', '/v1/lists', { name: 'Exclude' })).body.id;
    const pro = (
      await call('POST', '/v1/segments', {
        name: 'pro',
        definition: { all: [{ field: 'properties.plan', op: 'equals', value: 'pro' }] },
      })
    ).body.id;
    const emails = (f: (p: Person) => boolean | undefined) => people.filter(f).map((p) => p.email);
    expect(
      (await call('POST', `/v1/lists/${news}/contacts`, { emails: emails((p) => p.inList) })).status,
    ).toBe(200);
    expect(
      (await call('POST', `/v1/lists/${vips}/contacts`, { emails: emails((p) => p.excluded) })).status,
    ).toBe(200);
    expect(
      (await call('POST', `/v1/lists/${news}/unsubscribe`, { emails: emails((p) => p.listUnsubscribed) }))
        .status,
    ).toBe(200);
    for (const p of people.filter((p) => p.unsubscribed))
      expect((await call('PATCH', `/v1/contacts/${p.id}`, { subscribed: false })).status).toBe(200);
    for (const p of people.filter((p) => p.suppressed === 'unsubscribe' || p.suppressed === 'manual'))
      expect((await call('POST', '/v1/suppressions', { email: p.email, reason: p.suppressed })).status).toBe(
        200,
      );
    // bounces and complaints come from delivery, not the API: recorded the way delivery records them
    await suppress(
      server.runtime.ctx.db,
      people
        .filter((p) => p.suppressed === 'hard_bounce' || p.suppressed === 'complaint')
        .map((p) => ({ projectId: fresh.project.id, email: p.email, reason: p.suppressed as 'hard_bounce' })),
    );

    const campaign = await call('POST', '/v1/campaigns', {
      ...draft({ from: 'onboarding@posthorn.localhost' }),
      list_ids: [news],
      segment_ids: [pro],
      exclude_list_ids: [vips],
    });
    expect(campaign.status, JSON.stringify(campaign.body)).toBe(200);

    const expected = people
      .filter((p) => !p.unsubscribed && !p.suppressed && !p.excluded)
      .filter((p) => (p.inList && !p.listUnsubscribed) || p.pro)
      .map((p) => ({ contact_id: p.id, email: p.email }))
      .sort((a, b) => a.email.localeCompare(b.email));
    expect(expected.map((e) => e.email)).toEqual([
      'both@a.test',
      'left-list-but-pro@a.test',
      'list-only@a.test',
      'segment-only@a.test',
    ]);

    const preview = await call('GET', `/v1/campaigns/${campaign.body.id}/audience`);
    expect(preview.body).toEqual({
      object: 'campaign_audience',
      campaign_id: campaign.body.id,
      recipients: expected.length,
    });

    const db = server.runtime.ctx.db;
    const row = await db
      .selectFrom('campaigns')
      .selectAll()
      .where('id', '=', campaign.body.id)
      .executeTakeFirstOrThrow();
    const recipients = () =>
      db
        .selectFrom('campaign_recipients')
        .select(['contact_id', 'email'])
        .where('campaign_id', '=', row.id)
        .orderBy('email')
        .execute();
    expect(await snapshotAudience(db, row)).toBe(expected.length);
    expect(await recipients()).toEqual(expected);
    // a re-run (after a crash) adds nothing
    expect(await snapshotAudience(db, row)).toBe(0);
    expect(await recipients()).toEqual(expected);
    const after = await call('GET', `/v1/campaigns/${row.id}`);
    expect(after.body.recipient_count).toBe(expected.length);
    expect((await call('GET', `/v1/campaigns/${row.id}/audience`)).body.recipients).toBe(expected.length);
  }, 60_000);
});
