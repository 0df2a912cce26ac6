import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { STARTERS } from '../../src/domain/templates/starters.ts';
import { expectError } from '../helpers/assertions.ts';
import { campaignMessages, FROM } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Campaign content is checked when it is saved, as a template is (issue 28, item 2): Liquid parses,
 * names read are known, the template's variables get values, a trial render stays within the
 * limits; again when it is sent. A campaign's preheader replaces its template's (item 3), and a
 * campaign none of whose messages goes out ends `failed` with the reason (item 1).
 */

const ADDRESS = 'Checks Tests Ltd, 4 Mill Lane, York YO1 7HH';
const NINE_MILLION = '{% for a in (1..3000) %}{% for b in (1..3000) %}{% endfor %}{% endfor %}';

let server: TestServer;
let account: SignupResult;
let key: string;
let list: string;
let readers: string[];

const campaign = (extra: Record<string, unknown> = {}) => ({
  name: 'Checked news',
  from: FROM,
  subject: 'Hello {{ contact.first_name }}',
  html: '<html><body><p>Hello {{ contact.first_name }}</p></body></html>',
  list_ids: [list],
  ...extra,
});
const create = (body: Record<string, unknown>) => server.call('POST', '/v1/campaigns', { key, body });
const patch = (id: string, body: Record<string, unknown>) =>
  server.call('PATCH', `/v1/campaigns/${id}`, { key, body });
const send = (id: string) => server.call('POST', `/v1/campaigns/${id}/send`, { key });
const get = async (id: string) => (await server.call('GET', `/v1/campaigns/${id}`, { key })).body;

async function created(body: Record<string, unknown>): Promise<string> {
  const res = await create(body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id;
}

async function published(body: Record<string, unknown>): Promise<string> {
  const made = await server.call('POST', '/v1/templates', { key, body });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  expect((await server.call('POST', `/v1/templates/${made.body.id}/publish`, { key })).status).toBe(200);
  return made.body.id;
}

async function finished(id: string) {
  return eventually(
    async () => {
      const body = await get(id);
      if (body.status !== 'sent' && body.status !== 'failed') throw new Error(`status ${body.status}`);
      return body;
    },
    { timeoutMs: 60_000, intervalMs: 100, message: `campaign ${id} never finished` },
  );
}

const messagesOf = (campaignId: string) => campaignMessages(server.sink.messages, campaignId);

beforeAll(async () => {
  server = await startTestServer();
  account = await server.signupConfirmed();
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'pro');
  expect((await server.call('PATCH', '/v1/me/footer', { key, body: { address: ADDRESS } })).status).toBe(200);
  list = (await server.call('POST', '/v1/lists', { key, body: { name: 'Readers' } })).body.id;
  readers = ['ada', 'grace'].map((n) => `${n}@checks.example`);
  for (const [i, email] of readers.entries()) {
    const res = await server.call('POST', '/v1/contacts', {
      key,
      // more than the render's memory limit allows: a message for these contacts cannot be made
      body: { email, first_name: ['Ada', 'Grace'][i], properties: { count: 6_000_000 } },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }
  const added = await server.call('POST', `/v1/lists/${list}/contacts`, { key, body: { emails: readers } });
  expect(added.status, JSON.stringify(added.body)).toBe(200);
}, 60_000);
afterAll(() => server?.close());

describe('campaign content is checked when saved', () => {
  it.each([
    [
      'a name nobody declared, with what was meant',
      { subject: 'Hi {{ frist_name }}' },
      /^`subject` line 1, column 7: `frist_name` is not known here; did you mean `contact\.first_name`\?/,
    ],
    ['an unknown filter', { html: '<p>\n{{ 1 | money }}</p>' }, /^`html` line 2, column 1: .*filter.*money/],
    ['a file include', { html: "{% include '/etc/passwd' %}" }, /^`html` line 1, column 1: .*include/],
    [
      'a nine-million-iteration loop',
      { html: NINE_MILLION },
      /^`html` could not be rendered with sample values/,
    ],
    [
      'a typo in the preheader',
      { preheader: 'Hi {{ firstname }}' },
      /^`preheader` line 1.*contact\.first_name/,
    ],
  ])('refuses %s at create and at edit, naming the field', async (_what, fields, message) => {
    expectError(await create(campaign(fields)), 400, message);
    const id = await created(campaign());
    expectError(await patch(id, fields), 400, message);
    expect(await get(id)).toMatchObject({ subject: 'Hello {{ contact.first_name }}', preheader: null });
  });

  it("refuses an A/B variant's broken subject, naming the variant", async () => {
    const body = campaign({
      ab_test: {
        variants: [{ subject: 'Fine' }, { subject: 'Hey {{ contact.first_name | shout }}' }],
        test_share: 50,
        winner_by: 'opens',
      },
    });
    expectError(await create(body), 400, /^`ab_test\.variants\[1\]\.subject` line 1, column 5: .*shout/);
  });

  it('refuses at send and schedule what was stored before the checks existed', async () => {
    const id = await created(campaign());
    await server.runtime.ctx.db
      .updateTable('campaigns')
      .set({ subject: 'Hi {{ frist_name }}' })
      .where('id', '=', id)
      .execute();
    expectError(await send(id), 400, /^`subject` line 1.*`frist_name`/);
    const at = new Date(Date.now() + 3_600_000).toISOString();
    expectError(
      await server.call('POST', `/v1/campaigns/${id}/schedule`, { key, body: { scheduled_at: at } }),
      400,
      /^`subject` line 1.*`frist_name`/,
    );
    expect((await get(id)).status).toBe('draft');
  });
});

describe("a template's variables given beside `template_id`", () => {
  let template: string;
  beforeAll(async () => {
    template = await published({
      name: 'Order ready',
      subject: 'Order {{ order_id }} is ready',
      html: '<html><body><p>Hi {{ contact.first_name }}, order {{ order_id }} ({{ shop }})</p></body></html>',
      variables: [
        { name: 'order_id', type: 'string' },
        { name: 'shop', type: 'string', default: 'the shop' },
      ],
    });
  });
  const templated = (extra: Record<string, unknown> = {}) =>
    campaign({ subject: undefined, html: undefined, template_id: template, ...extra });

  it('refuses a required variable with neither a value nor a default, naming it', async () => {
    expectError(await create(templated()), 400, /^`variables`: template variable `order_id` .*required/);
  });

  it('refuses a value for a variable the template lacks, or a value of the wrong type', async () => {
    expectError(
      await create(templated({ variables: { order_id: 'A1', shpo: 'x' } })),
      400,
      /`variables`: .*no variable `shpo`/,
    );
    expectError(
      await create(templated({ variables: { order_id: 12 } })),
      400,
      /`variables`: .*order_id.*string/,
    );
  });

  it('refuses `variables` with inline HTML', async () => {
    expectError(await create(campaign({ variables: { a: 'b' } })), 400, /`variables` go with `template_id`/);
  });

  it("reads the template's variables in the campaign's own subject, and refuses a typo in them", async () => {
    expectError(
      await create(templated({ variables: { order_id: 'A1' }, subject: 'Order {{ order_di }}' })),
      400,
      /^`subject` line 1, column 10: `order_di` .*did you mean `order_id`/,
    );
  });

  it('sends with the values given (defaults filling the rest); a later edit is checked again', async () => {
    const id = await created(templated({ variables: { order_id: 'A-1001' }, name: 'Orders' }));
    expect(await get(id)).toMatchObject({ variables: { order_id: 'A-1001' } });
    expectError(await patch(id, { variables: {} }), 400, /`order_id`/);
    expect((await send(id)).status).toBe(200);
    expect(await finished(id)).toMatchObject({ status: 'sent', failure_reason: null });
    const messages = await eventually(() => {
      const found = messagesOf(id);
      expect(found).toHaveLength(readers.length);
      return found;
    });
    for (const m of messages) {
      expect(m.parsed.subject).toBe('Order A-1001 is ready');
      expect(m.parsed.html).toContain('order A-1001 (the shop)');
    }
  }, 90_000);
});

describe('the starters', () => {
  it('go from the editor to a sent campaign without an edit', async () => {
    for (const starter of STARTERS) {
      const template = await published({ name: `From ${starter.key}`, starter: starter.key });
      const id = await created({
        name: `Starter ${starter.key}`,
        from: FROM,
        template_id: template,
        list_ids: [list],
      });
      const started = await send(id);
      expect(started.status, JSON.stringify(started.body)).toBe(200);
      expect(await finished(id), starter.key).toMatchObject({ status: 'sent', failure_reason: null });
      await eventually(() => expect(messagesOf(id)).toHaveLength(readers.length));
    }
  }, 120_000);
});

describe("a campaign's preheader", () => {
  it("replaces its template's preheader", async () => {
    const template = await published({
      name: 'With preview',
      subject: 'Spring',
      html: '<html><body><p>Spring is here</p></body></html>',
      preheader: 'The template preview line',
    });
    const id = await created(
      campaign({
        subject: undefined,
        html: undefined,
        template_id: template,
        preheader: 'The campaign preview for {{ contact.first_name }}',
      }),
    );
    expect((await send(id)).status).toBe(200);
    expect((await finished(id)).status).toBe('sent');
    const messages = await eventually(() => {
      const found = messagesOf(id);
      expect(found).toHaveLength(readers.length);
      return found;
    });
    for (const m of messages) {
      const html = m.parsed.html as string;
      expect(html).toMatch(/The campaign preview for (Ada|Grace)/);
      expect(html).not.toContain('The template preview line');
      // the preview line comes first in the body, hidden
      expect(html.indexOf('The campaign preview')).toBeLessThan(html.indexOf('Spring is here'));
    }
  }, 90_000);
});

describe('a campaign whose every recipient fails', () => {
  it('ends failed with the reason, not sent', async () => {
    // fine with sample values at save; too large for these contacts' data when sent
    const id = await created(
      campaign({ html: '<p>{% for i in (1..contact.properties.count) %}{% endfor %}Hi</p>' }),
    );
    expect((await send(id)).status).toBe(200);
    const done = await finished(id);
    expect(done.status).toBe('failed');
    expect(done.failure_reason).toMatch(
      /^No message went out: 2 of 2 recipients failed, for example: .*(memory|limit)/i,
    );
    expect(done.finished_at).not.toBeNull();
    expect(messagesOf(id)).toEqual([]);
  }, 90_000);
});
