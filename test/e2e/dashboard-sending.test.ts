import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen, signInWithCode } from '../helpers/dashboard.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { publishRecords, type RecordToPublish } from '../helpers/dns-zone.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { deliverToMx } from '../helpers/smtp-clients.ts';

/** The sending screens: domains, SMTP, webhooks, suppressions and inbound mail. */

/** A real HTTP receiver on 127.0.0.1 that records the webhook deliveries it gets. */
async function startReceiver() {
  const received: { headers: Record<string, unknown>; body: string }[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

let server: TestServer;
let browser: TestBrowser;
let dns: TestDnsServer;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let page: Page;
let owner: SignupResult;

beforeAll(async () => {
  [dns, receiver, browser] = await Promise.all([startDnsServer(), startReceiver(), launchBrowser()]);
  server = await startTestServer(
    {
      // inbound mail and webhooks are plan features; plain http to 127.0.0.1 is for development
      POSTHORN_DEFAULT_PLAN: 'pro',
      POSTHORN_WEBHOOK_ALLOW_PRIVATE: '1',
      POSTHORN_DNS_SERVERS: dns.address,
      POSTHORN_SMTP_PORT: '0',
      POSTHORN_MX_PORT: '0',
    },
    ['api', 'worker', 'smtp'],
  );
  owner = await server.signupConfirmed({ name: 'Sam Sender' });
  page = await browser.context.newPage();
  await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  // a missing element fails the step that looks for it, well before the test's own timeout
  page.setDefaultTimeout(10_000);
  await signInWithCode(page, server, owner.account.email);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await receiver?.close();
  await dns?.close();
});

const heading = (p: Page, name: string) => p.getByRole('heading', { level: 1, name }).waitFor();
const clipboard = (p: Page) =>
  p.evaluate(() =>
    (
      globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }
    ).navigator.clipboard.readText(),
  );

const publish = (records: RecordToPublish[]) => publishRecords(dns, records);

describe('the sending screens', () => {
  it('adds a domain, shows each record with copy buttons, and checks it now', async () => {
    await page.goto(`${server.url}/domains`);
    await checkScreen(page, 'domains (none yet)', (p) => p.getByText('No domains yet.').waitFor());
    await page.getByRole('button', { name: 'Add domain' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add a sending domain' });
    await dialog.getByLabel('Domain', { exact: true }).fill('Mail.Example.com');
    await checkScreen(page, 'add domain dialog', () => dialog.waitFor());
    await dialog.getByRole('button', { name: 'Add domain' }).click();
    await heading(page, 'mail.example.com');

    const api = await server.call('GET', '/v1/domains', { key: owner.project_key.key });
    const domain = api.body.data[0];
    const records = page.getByRole('listitem').filter({ has: page.getByRole('region') });
    await eventually(async () => expect(await records.count()).toBe(domain.records.length), {
      timeoutMs: 15_000,
    });
    const dkim = page.getByRole('region', { name: 'TXT · DKIM' });
    await dkim.getByText(domain.records[0].name, { exact: true }).waitFor();
    await dkim.getByText('pending', { exact: true }).waitFor();
    for (let i = 0; i < domain.records.length; i++) {
      const record = records.nth(i);
      await record.getByRole('button', { name: 'Copy name' }).waitFor();
      await record.getByRole('button', { name: 'Copy value' }).waitFor();
    }
    await dkim.getByRole('button', { name: 'Copy value' }).click();
    await dkim.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await clipboard(page)).toBe(domain.records[0].value);
    await checkScreen(page, 'domain page (pending)', (p) =>
      p.getByRole('button', { name: 'Check now' }).waitFor(),
    );

    // the records go up in DNS; "Check now" finds them
    publish(domain.records.filter((r: { required: boolean }) => r.required));
    await page.getByRole('button', { name: 'Check now' }).click();
    await page.getByText('Checked just now: verified.').waitFor();
    await dkim.getByText('verified', { exact: true }).waitFor();
    await page.getByText(/^Verified .*: mail from @mail\.example\.com is signed/).waitFor();

    await page.getByRole('button', { name: 'Turn inbound on' }).click();
    await page.getByRole('region', { name: 'MX · Inbound' }).waitFor();
    await page.getByRole('button', { name: 'Turn inbound off' }).waitFor();
    const rate = page.getByRole('form', { name: 'Domain sending rate' });
    await rate.getByLabel('Messages per second', { exact: true }).fill('5');
    await rate.getByRole('button', { name: 'Save rate' }).click();
    await rate.getByText('Sending rate saved.').waitFor();
    const saved = await server.call('GET', `/v1/domains/${domain.id}`, { key: owner.project_key.key });
    expect(saved.body).toMatchObject({ status: 'verified', inbound_enabled: true, rate: { per_second: 5 } });
    await checkScreen(page, 'domain page (verified)', (p) =>
      p.getByRole('button', { name: 'Turn inbound off' }).waitFor(),
    );

    await page.getByRole('link', { name: 'Back to domains' }).click();
    const row = page.getByRole('row', { name: /mail\.example\.com/ });
    await row.getByText('verified', { exact: true }).waitFor();
    await checkScreen(page, 'domains', () => row.waitFor());
  });

  it('shows how to send through SMTP with an API key as the password', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'SMTP' }).click();
    await heading(page, 'SMTP');
    expect(await page.getByLabel('Username', { exact: true }).inputValue()).toBe('posthorn');
    expect(await page.getByLabel('Username for an all-access key', { exact: true }).inputValue()).toBe(
      owner.project.id,
    );
    await page.getByText('POSTHORN_SMTP_HOST').first().waitFor();
    // the host and the port this server listens on, from GET /v1/me
    const me = await server.call('GET', '/v1/me', { key: owner.project_key.key });
    expect(me.body.smtp.port).toBeGreaterThan(0);
    expect(await page.getByLabel('Host', { exact: true }).inputValue()).toBe(me.body.smtp.host);
    expect(await page.getByLabel('Port', { exact: true }).inputValue()).toBe(String(me.body.smtp.port));
    await page.getByText('mail.example.com', { exact: false }).first().waitFor();
    await checkScreen(page, 'SMTP', (p) => p.getByRole('region', { name: 'Example' }).waitFor());
  });

  it('creates a webhook (secret shown once), sends a test, sees the delivery, retries it and rotates the secret', async () => {
    await page.goto(`${server.url}/webhooks`);
    await checkScreen(page, 'webhooks (none yet)', (p) => p.getByText('No webhooks yet.').waitFor());
    await page.getByRole('button', { name: 'Create webhook' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create a webhook' });
    await dialog.getByLabel('URL', { exact: true }).fill(receiver.url);
    await dialog.getByLabel('Description', { exact: true }).fill('my app');
    await dialog.getByRole('checkbox', { name: 'email.delivered' }).check();
    await dialog.getByRole('checkbox', { name: 'email.bounced' }).check();
    await checkScreen(page, 'create webhook dialog', () => dialog.waitFor());
    await dialog.getByRole('button', { name: 'Create webhook' }).click();

    const shown = page.getByRole('dialog', { name: 'Your new webhook' });
    const secret = await shown.getByLabel('Signing secret', { exact: true }).inputValue();
    expect(secret).toMatch(/^whsec_/);
    await shown.getByRole('button', { name: 'Copy signing secret' }).waitFor();
    await checkScreen(page, 'new webhook secret', () => shown.waitFor());
    await shown.getByRole('button', { name: 'I have copied it' }).click();
    const row = page.getByRole('row', { name: new RegExp(receiver.url.replaceAll('.', '\\.')) });
    await row.getByText('email.delivered, email.bounced').waitFor();
    expect(await page.content()).not.toContain(secret);
    await checkScreen(page, 'webhooks', () => row.waitFor());

    await row.getByRole('link', { name: receiver.url }).click();
    await heading(page, 'Webhook');
    await page.getByText('No deliveries yet.').waitFor();
    expect(await page.content()).not.toContain(secret);
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.getByText(/^The test event was delivered: your endpoint answered with 200/).waitFor();
    expect(receiver.received).toHaveLength(1);
    expect(JSON.parse(receiver.received[0]?.body ?? '{}')).toMatchObject({ type: 'webhook.test' });
    const deliveries = page.getByRole('region', { name: 'Deliveries' });
    const first = deliveries.getByRole('row', { name: /webhook\.test/ });
    await first.getByText('succeeded', { exact: true }).waitFor();
    await first.getByText(/HTTP 200/).waitFor();
    await checkScreen(page, 'webhook page', () => first.waitFor());

    await first.getByRole('button', { name: /^Retry webhook\.test/ }).click();
    await deliveries.getByText('2 deliveries · page 1 of 1').waitFor();
    // the worker sends the new attempt; the log looks again while one is pending
    const succeeded = deliveries.getByRole('row', { name: /webhook\.test/ }).filter({ hasText: 'succeeded' });
    await eventually(async () => expect(await succeeded.count()).toBe(2), { timeoutMs: 15_000 });
    expect(receiver.received).toHaveLength(2);
    // a retry is the same message again: the same webhook-id
    expect(receiver.received[1]?.headers['webhook-id']).toBe(receiver.received[0]?.headers['webhook-id']);

    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const rotate = page.getByRole('dialog', { name: 'Rotate the signing secret?' });
    await rotate.getByRole('button', { name: 'Rotate secret' }).click();
    const rotated = page.getByRole('dialog', { name: 'Your new signing secret' });
    const next = await rotated.getByLabel('Signing secret', { exact: true }).inputValue();
    expect(next).toMatch(/^whsec_/);
    expect(next).not.toBe(secret);
    await rotated.getByRole('button', { name: 'I have copied it' }).click();
    await page.reload();
    await deliveries.getByText('2 deliveries · page 1 of 1').waitFor();
    expect(await page.content()).not.toContain(next);
  });

  it('adds an address to the suppression list and removes it', async () => {
    await page.goto(`${server.url}/suppressions`);
    await checkScreen(page, 'suppressions (none yet)', (p) =>
      p.getByText('No suppressed addresses.').waitFor(),
    );
    const form = page.getByRole('form', { name: 'Suppress an address' });
    await form.getByLabel('Email address', { exact: true }).fill('Gone@Example.com');
    await form.getByRole('button', { name: 'Suppress' }).click();
    await form.getByText('gone@example.com is suppressed.').waitFor();
    await form.getByLabel('Email address', { exact: true }).fill('quiet@example.com');
    await form.getByLabel('Blocks', { exact: true }).selectOption('unsubscribe');
    await form.getByRole('button', { name: 'Suppress' }).click();
    const gone = page.getByRole('row', { name: /gone@example\.com/ });
    await gone.getByText('added by hand').waitFor();
    await page
      .getByRole('row', { name: /quiet@example\.com/ })
      .getByText('unsubscribed')
      .waitFor();
    await checkScreen(page, 'suppressions', () => gone.waitFor());

    await page.getByLabel('Reason', { exact: true }).selectOption('unsubscribe');
    await page.getByText('1 address · page 1 of 1').waitFor();
    await page.getByLabel('Reason', { exact: true }).selectOption('');
    await page.getByText('2 addresses · page 1 of 1').waitFor();

    await gone.getByRole('button', { name: 'Remove gone@example.com' }).click();
    const confirm = page.getByRole('dialog', { name: 'Remove gone@example.com?' });
    await checkScreen(page, 'remove suppression dialog', () => confirm.waitFor());
    await confirm.getByRole('button', { name: 'Remove from the list' }).click();
    await page.getByText('1 address · page 1 of 1').waitFor();
    expect(await gone.count()).toBe(0);
    const api = await server.call('GET', '/v1/suppressions', { key: owner.project_key.key });
    expect(api.body.data.map((s: { email: string }) => s.email)).toEqual(['quiet@example.com']);
  });

  it('lists received mail and shows a message with its headers, text and sandboxed HTML', async () => {
    const me = await server.call('GET', '/v1/me', { key: owner.project_key.key });
    const to = `support@${me.body.inbound.domain}`;
    const boundary = 'b-inbound-test';
    const raw = [
      'From: Rita Reader <rita@reader.example>',
      `To: ${to}`,
      'Subject: Question about my order',
      'Message-ID: <q1@reader.example>',
      'Date: Sun, 22 Nov 2026 10:00:00 +0000',
      'MIME-Version: 1.0',
      `Content-Type: multipart/alternative; boundary="${boundary}"`,
      '',
      `--${boundary}`,
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Where is my parcel?',
      `--${boundary}`,
      'Content-Type: text/html; charset=utf-8',
      '',
      '<h1>Where is my parcel?</h1><script>parent.document.title = "pwned"</script>',
      `--${boundary}--`,
      '',
    ].join('\r\n');
    const sent = await deliverToMx(server, { from: 'rita@reader.example', to: [to] }, raw);
    expect(sent.ok, sent.response).toBe(true);

    await page.goto(`${server.url}/inbound`);
    expect(await page.getByLabel('Inbound address', { exact: true }).inputValue()).toBe(
      me.body.inbound.address,
    );
    const link = page.getByRole('link', { name: 'Question about my order' });
    await checkScreen(page, 'inbound', () => link.waitFor());
    await page.getByLabel('Sender', { exact: true }).fill('nobody@example.com');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('No mail received from this sender.').waitFor();
    await page.getByLabel('Sender', { exact: true }).fill('rita@reader.example');
    await page.getByRole('button', { name: 'Search' }).click();
    await link.click();

    await heading(page, 'Question about my order');
    await page
      .getByRole('region', { name: 'Message' })
      .getByText('"Rita Reader" <rita@reader.example>')
      .waitFor();
    await page.getByRole('region', { name: 'Authentication' }).getByText('SPF').waitFor();
    const frame = page.locator('iframe[title="Preview of the message\'s HTML"]');
    expect(await frame.getAttribute('sandbox')).toBe('');
    await eventually(
      async () =>
        expect(
          await page.frameLocator('iframe').getByRole('heading', { name: 'Where is my parcel?' }).count(),
        ).toBe(1),
      { timeoutMs: 1_000 },
    );
    expect(await page.title()).not.toBe('pwned');
    await checkScreen(page, 'inbound message', (p) => p.getByRole('region', { name: 'Content' }).waitFor());
    await page.getByRole('tab', { name: 'Text', exact: true }).click();
    await page.getByRole('tabpanel').getByText('Where is my parcel?').waitFor();
    await page.getByRole('tab', { name: 'Headers', exact: true }).click();
    await page.getByRole('tabpanel').getByText('Message-ID: <q1@reader.example>').waitFor();
  });
});
