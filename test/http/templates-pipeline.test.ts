import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { FROM, sharedDkimResolver, waitForStatus } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/** A message sent from a template, from the API to a real SMTP sink. */

let server: TestServer;
let account: SignupResult;
let key: string;
beforeAll(async () => {
  server = await startTestServer();
  account = await server.signupConfirmed();
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
});
afterAll(() => server?.close());

const MJML = (greeting: string) => `<mjml>
  <mj-body>
    <mj-section>
      <mj-column>
        <mj-text>${greeting} {{ contact.first_name | default: "friend" }}, your order {{ order }} ships on {{ ship_date | date: "%B %-d" }}.</mj-text>
        <mj-button href="https://shop.example.com/orders/{{ order }}">Track {{ order }}</mj-button>
      </mj-column>
    </mj-section>
  </mj-body>
</mjml>`;

async function publishedTemplate(name: string) {
  const created = await server.call('POST', '/v1/templates', {
    key,
    body: {
      name,
      subject: 'Order {{ order }} for {{ contact.first_name | default: "you" }}',
      mjml: MJML('Hello'),
      preheader: 'Your order {{ order }} is on its way',
      variables: [
        { name: 'order', type: 'string' },
        { name: 'ship_date', type: 'date', default: '2026-12-03T09:00:00Z' },
      ],
    },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const published = await server.call('POST', `/v1/templates/${created.body.id}/publish`, { key });
  expect(published.body.version).toBe(1);
  return created.body.id as string;
}

describe('sending from a template', () => {
  it('arrives personalised (subject, HTML, text), DKIM-signed, and the email records the template version', async () => {
    const id = await publishedTemplate('Shipping');
    const contact = await server.call('POST', '/v1/contacts', {
      key,
      body: { email: 'ada@example.org', first_name: 'Ada' },
    });
    expect(contact.status).toBe(200);
    const sent = await server.call('POST', '/v1/emails', {
      key,
      body: { from: FROM, to: 'Ada <ada@example.org>', template: { id, variables: { order: 'A-1042' } } },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const email = await waitForStatus(server, key, sent.body.id, 'sent');
    expect(email.template).toEqual({ id, version: 1 });
    expect(email.subject).toBe('Order A-1042 for Ada');

    const message = await server.sink.waitFor((m) => m.parsed.messageId === email.message_id);
    expect(message.parsed.subject).toBe('Order A-1042 for Ada');
    expect(message.parsed.html).toContain('Hello Ada, your order A-1042 ships on December 3.');
    expect(message.parsed.html).toContain('href="https://shop.example.com/orders/A-1042"');
    expect(message.parsed.html).toContain('Your order A-1042 is on its way');
    expect(message.parsed.text).toContain('Hello Ada, your order A-1042 ships on December 3.');
    // the hidden preheader is for the inbox list, not the first line of the text part
    expect(message.parsed.text).not.toContain('is on its way');
    expect(message.parsed.html).not.toContain('{{');

    const { resolver } = await sharedDkimResolver(server);
    const verified = await dkimVerify(message.raw, { resolver });
    expect(verified.results[0].status.result).toBe('pass');
    expect(verified.results[0].signingDomain).toBe('posthorn.localhost');
  });

  it('a scheduled email keeps the version it was accepted with when a new version is published', async () => {
    const id = await publishedTemplate('Pinned');
    const scheduled = await server.call('POST', '/v1/emails', {
      key,
      body: {
        from: FROM,
        to: 'pinned@example.org',
        template: { id, variables: { order: 'P-1' } },
        scheduled_at: new Date(Date.now() + 3_000).toISOString(),
      },
    });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
    expect(scheduled.body.status).toBe('scheduled');

    const edited = await server.call('PATCH', `/v1/templates/${id}`, {
      key,
      body: { mjml: MJML('Goodbye'), subject: 'Changed {{ order }}' },
    });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect((await server.call('POST', `/v1/templates/${id}/publish`, { key })).body.version).toBe(2);

    const email = await waitForStatus(server, key, scheduled.body.id, 'sent');
    expect(email.template).toEqual({ id, version: 1 });
    const message = await server.sink.waitFor((m) => m.parsed.messageId === email.message_id);
    expect(message.parsed.subject).toBe('Order P-1 for you');
    expect(message.parsed.html).toContain('Hello friend, your order P-1');
    expect(message.parsed.html).not.toContain('Goodbye');

    // a send after the new version uses it
    const later = await server.call('POST', '/v1/emails', {
      key,
      body: { from: FROM, to: 'pinned@example.org', template: { id, variables: { order: 'P-2' } } },
    });
    const laterEmail = await waitForStatus(server, key, later.body.id, 'sent');
    expect(laterEmail.template).toEqual({ id, version: 2 });
    expect(laterEmail.subject).toBe('Changed P-2');
  });
});
