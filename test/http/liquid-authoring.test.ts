import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { expectError } from '../helpers/assertions.ts';
import { FROM } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// Issue 28, item 3: Liquid and MJML behave as template authors expect.

let server: TestServer;
let key: string;
let list: string;
const READER = 'ann@readers.example';
const LINK = 'https://shop.example.com/spring?utm_source=news';

beforeAll(async () => {
  server = await startTestServer();
  const account = await server.signupConfirmed();
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'starter');
  expect(
    (await server.call('PATCH', '/v1/me/footer', { key, body: { address: '2 High Street, Leeds LS1 1AA' } }))
      .status,
  ).toBe(200);
  const contact = await server.call('POST', '/v1/contacts', {
    key,
    body: { email: READER, first_name: 'Ann', last_name: "O'Neil & Sons" },
  });
  expect(contact.status, JSON.stringify(contact.body)).toBe(200);
  list = (await server.call('POST', '/v1/lists', { key, body: { name: 'Readers' } })).body.id;
  expect(
    (await server.call('POST', `/v1/lists/${list}/contacts`, { key, body: { emails: [READER] } })).status,
  ).toBe(200);
}, 60_000);
afterAll(() => server?.close());

let names = 0;
async function template(body: Record<string, unknown>) {
  const res = await server.call('POST', '/v1/templates', {
    key,
    body: { name: `Authoring ${++names}`, ...body },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id as string;
}
const preview = async (id: string, body: Record<string, unknown> = {}) => {
  const res = await server.call('POST', `/v1/templates/${id}/preview`, { key, body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { subject: string; html: string; text: string };
};
const mjml = (body: string, head = '') =>
  `<mjml>${head ? `<mj-head>${head}</mj-head>` : ''}<mj-body>${body}</mj-body></mjml>`;
const section = (text: string) =>
  `<mj-section><mj-column><mj-text>${text}</mj-text></mj-column></mj-section>`;

describe('Liquid as authors expect', () => {
  it('escapes captured output once', async () => {
    const id = await template({
      subject: 'Hello',
      html: '{% capture who %}{{ contact.first_name }} {{ contact.last_name }}{% endcapture %}<p>Dear {{ who }}</p>',
    });
    const shown = await preview(id, { contact: READER });
    expect(shown.html).toContain('<p>Dear Ann O&#39;Neil &amp; Sons</p>');
    expect(shown.text).toBe("Dear Ann O'Neil & Sons");
    // what is not captured is still escaped
    const direct = await template({ subject: 'Hi', html: '<p>{{ contact.last_name }} {{ "<b>" }}</p>' });
    expect((await preview(direct, { contact: READER })).html).toBe('<p>O&#39;Neil &amp; Sons &lt;b&gt;</p>');
  });

  it('renders subject, HTML and text each in a scope of its own', async () => {
    const id = await template({
      subject: 's{% increment c %}',
      html: '<p>h{% increment c %}</p>',
      text: 't{% increment c %}{% assign x = 1 %}',
    });
    const shown = await preview(id);
    expect(shown.subject).toBe('s0');
    expect(shown.html).toBe('<p>h0</p>');
    expect(shown.text).toBe('t0');
  });
});

describe('MJML with Liquid control flow', () => {
  it('keeps an {% if %} around a section and a {% for %} around a column', async () => {
    const id = await template({
      subject: 'News',
      mjml: mjml(
        `${section('For everyone')}{% if vip %}${section('VIP only')}{% endif %}` +
          '<mj-section>{% for i in (1..2) %}<mj-column><mj-text>Column {{ i }}</mj-text></mj-column>{% endfor %}</mj-section>',
      ),
      variables: [{ name: 'vip', type: 'boolean', default: false }],
    });
    const plain = await preview(id, { variables: { vip: false } });
    expect(plain.html).toContain('For everyone');
    expect(plain.html).not.toContain('VIP only');
    expect(plain.html).toContain('Column 1');
    expect(plain.html).toContain('Column 2');
    const vip = await preview(id, { variables: { vip: true } });
    expect(vip.html).toContain('VIP only');
    // the Outlook tables stay balanced either way
    for (const html of [plain.html, vip.html])
      expect((html.match(/<table/g) ?? []).length).toBe((html.match(/<\/table>/g) ?? []).length);
  });

  it('refuses at save a Liquid tag where MJML would drop it, saying where to put it', async () => {
    const res = await server.call('POST', '/v1/templates', {
      key,
      body: {
        name: 'Menu',
        subject: 'Menu',
        mjml: `<mjml><mj-body><mj-section><mj-column>
<mj-navbar>{% if vip %}<mj-navbar-link href="https://example.com/vip">VIP</mj-navbar-link>{% endif %}</mj-navbar>
</mj-column></mj-section></mj-body></mjml>`,
        variables: [{ name: 'vip', type: 'boolean', default: false }],
      },
    });
    expectError(
      res,
      400,
      /`mjml` line 2: a Liquid tag directly inside <mj-navbar> would be dropped.*mj-text/,
    );
  });
});

describe('the text part', () => {
  it('leaves out the preview text, menu icons and carousel controls', async () => {
    const id = await template({
      subject: 'Menu',
      mjml: mjml(
        '<mj-section><mj-column><mj-navbar hamburger="hamburger"><mj-navbar-link href="https://example.com/a">Alpha</mj-navbar-link></mj-navbar></mj-column></mj-section>' +
          '<mj-section><mj-column><mj-carousel><mj-carousel-image src="https://example.com/1.jpg" alt="one" /><mj-carousel-image src="https://example.com/2.jpg" alt="two" /></mj-carousel></mj-column></mj-section>' +
          section('Hello <a href="https://example.com/x">there</a>'),
        '<mj-preview>Seen in the inbox list</mj-preview>',
      ),
    });
    const { text } = await preview(id);
    expect(text).toBe('Alpha (https://example.com/a)\n\nHello there (https://example.com/x)');
  });

  it('shows links as written in every stream, a template campaign as an HTML one', async () => {
    const html = `<html><body><p>Hello {{ contact.first_name }}</p><p><a href="${LINK}">See the sale</a></p></body></html>`;
    const fromTemplate = await template({ subject: 'Spring', html });
    const publish = await server.call('POST', `/v1/templates/${fromTemplate}/publish`, { key });
    expect(publish.status, JSON.stringify(publish.body)).toBe(200);
    for (const content of [{ html }, { template_id: fromTemplate }]) {
      const created = await server.call('POST', '/v1/campaigns', {
        key,
        body: { name: 'Spring', from: FROM, subject: 'Spring', list_ids: [list], ...content },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const sent = await server.call('POST', `/v1/campaigns/${created.body.id}/send`, { key });
      expect(sent.status, JSON.stringify(sent.body)).toBe(200);
      const message = await eventually(
        () => {
          const found = server.sink.messages.find((m) =>
            String(m.parsed.headers.get('feedback-id') ?? '').includes(created.body.id),
          );
          if (!found) throw new Error('not delivered yet');
          return found;
        },
        { timeoutMs: 30_000, message: `campaign ${JSON.stringify(content)} was not delivered` },
      );
      // the HTML's link is tracked; the text part shows it as written, then the footer
      expect(message.parsed.html).toMatch(/href="http:\/\/[^"]+\/t\/c\/[\w-]+"/);
      expect(message.parsed.text).toContain(`See the sale (${LINK})`);
      expect(message.parsed.text).not.toMatch(/\/t\/c\//);
      expect(message.parsed.text).toContain('2 High Street, Leeds LS1 1AA');
    }
  });
});
