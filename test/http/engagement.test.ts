import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { clickToken, openToken, unsubscribeToken } from '../../src/domain/marketing/tokens.ts';
import { FROM, waitForStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';
const READER = 'reader@example.org';
const LINK = 'https://shop.example.com/sale?utm_source=posthorn&a=1&b=%20x#top';

let server: TestServer;
let account: SignupResult;
let key: string;
let contactId: string;
let emailId: string;
const hooks: { type: string; data: any }[] = [];
const receiver = createServer((req, res) => {
  let raw = '';
  req.on('data', (c) => (raw += c));
  req.on('end', () => {
    hooks.push(JSON.parse(raw));
    res.writeHead(200).end();
  });
});

beforeAll(async () => {
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  server = await startTestServer({ POSTHORN_WEBHOOK_ALLOW_PRIVATE: '1', POSTHORN_WEBHOOK_SCHEDULE: '0,1' });
  account = await server.signupConfirmed();
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'starter');
  const hook = await server.call('POST', '/v1/webhooks', {
    key,
    body: {
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
      events: ['email.opened', 'email.clicked', 'email.unsubscribed', 'contact.unsubscribed'],
    },
  });
  expect(hook.status).toBe(200);
  const contact = await server.call('POST', '/v1/contacts', { key, body: { email: READER } });
  expect(contact.status).toBe(200);
  contactId = contact.body.id;
  const sent = await server.call('POST', '/v1/emails', {
    key,
    body: { from: FROM, to: READER, subject: 'News', html: '<p>News</p>' },
  });
  emailId = sent.body.id;
  await waitForStatus(server, key, emailId, 'sent');
  // what a campaign will do: name the contact; and let the send be a minute old (no machine window)
  await server.runtime.ctx.db
    .updateTable('emails')
    .set({ contact_id: contactId, sent_at: new Date(Date.now() - 60_000) })
    .where('id', '=', emailId)
    .execute();
});
afterAll(async () => {
  await server?.close();
  receiver.closeAllConnections();
  await new Promise<void>((r) => receiver.close(() => r()));
});

const ctx = () => server.runtime.ctx;
const get = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, { headers, redirect: 'manual' });
const postForm = (path: string, body: string) =>
  fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body,
  });

async function events(type: string) {
  const email = (await server.call('GET', `/v1/emails/${emailId}`, { key })).body;
  return email.events.filter((e: { type: string }) => e.type === type);
}

async function state() {
  const contact = (await server.call('GET', `/v1/contacts/${contactId}`, { key })).body;
  const suppressions = (await server.call('GET', '/v1/suppressions', { key })).body.data;
  return {
    subscribed: contact.subscribed,
    consents: contact.consent_history.length,
    suppressions,
    unsubscribed: (await events('unsubscribed')).length,
  };
}

/** The token with one character changed. */
const tamper = (token: string) => `${token.slice(0, 5)}${token[5] === 'A' ? 'B' : 'A'}${token.slice(6)}`;

describe('unsubscribe link', () => {
  it('a one-click POST unsubscribes at once: suppression, withdrawn consent, event and webhooks', async () => {
    const token = unsubscribeToken(ctx(), { emailId, contactId });
    const res = await postForm(`/u/${token}`, 'List-Unsubscribe=One-Click');
    expect(res.status).toBe(200);
    const after = await state();
    expect(after.subscribed).toBe(false);
    expect(after.suppressions).toEqual([
      expect.objectContaining({ email: READER, reason: 'unsubscribe', source_email_id: emailId }),
    ]);
    expect(after.unsubscribed).toBe(1);
    const contact = (await server.call('GET', `/v1/contacts/${contactId}`, { key })).body;
    expect(contact.consent_history.at(-1)).toMatchObject({ status: 'withdrawn', source: 'unsubscribe_link' });
    await eventually(() => {
      expect(hooks.find((h) => h.type === 'email.unsubscribed')?.data).toMatchObject({
        id: emailId,
        event: { type: 'unsubscribed', recipient: READER },
      });
      expect(hooks.find((h) => h.type === 'contact.unsubscribed')?.data).toMatchObject({
        id: contactId,
        subscribed: false,
      });
    });
  });

  it('a second POST answers 200 and changes nothing', async () => {
    const before = await state();
    const res = await postForm(
      `/u/${unsubscribeToken(ctx(), { emailId, contactId })}`,
      'List-Unsubscribe=One-Click',
    );
    expect(res.status).toBe(200);
    expect(await state()).toEqual(before);
  });

  it('a tampered token is 404 and changes nothing', async () => {
    const before = await state();
    const token = tamper(unsubscribeToken(ctx(), { emailId, contactId }));
    const res = await postForm(`/u/${token}`, 'scope=resubscribe');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect((await get(`/u/${token}`)).status).toBe(404);
    expect((await get(`/u/${openToken(ctx(), emailId)}`)).status).toBe(404);
    expect(await state()).toEqual(before);
  });

  it('the preference page shows the address and posts its choice back to the same link', async () => {
    const token = unsubscribeToken(ctx(), { emailId, contactId });
    const res = await get(`/u/${token}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    const html = await res.text();
    expect(html).toContain(READER);
    expect(html).toContain(`action="/u/${token}"`);
    expect(html).toContain('name="scope" value="resubscribe"');
    // nothing changes by opening the page (link scanners open it)
    expect((await state()).unsubscribed).toBe(1);
  });

  it('resubscribing from the page lifts the suppression; a multipart one-click unsubscribes again', async () => {
    const token = unsubscribeToken(ctx(), { emailId, contactId });
    expect((await postForm(`/u/${token}`, 'scope=resubscribe')).status).toBe(200);
    const back = await state();
    expect(back.subscribed).toBe(true);
    expect(back.suppressions).toEqual([]);
    expect(await (await get(`/u/${token}`)).text()).toContain('name="scope" value="all"');

    const form = new FormData();
    form.set('List-Unsubscribe', 'One-Click');
    const res = await fetch(`${server.url}/u/${token}`, { method: 'POST', body: form });
    expect(res.status).toBe(200);
    const gone = await state();
    expect(gone.subscribed).toBe(false);
    expect(gone.suppressions).toEqual([expect.objectContaining({ reason: 'unsubscribe' })]);
    expect(gone.unsubscribed).toBe(2);
  });

  it('still accepts and delivers transactional mail to the unsubscribed contact', async () => {
    const res = await server.call('POST', '/v1/emails', {
      key,
      body: { from: FROM, to: READER, subject: 'Your receipt', text: 'Thanks' },
    });
    expect(res.status).toBe(200);
    await waitForStatus(server, key, res.body.id, 'sent');
  });
});

describe('tracking', () => {
  it('the open pixel is a 43-byte GIF and records a human open', async () => {
    const res = await get(`/t/o/${openToken(ctx(), emailId)}`, { 'user-agent': CHROME });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/gif');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect((await res.arrayBuffer()).byteLength).toBe(43);
    expect(await events('opened')).toEqual([
      expect.objectContaining({ detail: { user_agent_class: 'human', first: true } }),
    ]);
    await eventually(() => expect(hooks.some((h) => h.type === 'email.opened')).toBe(true));
  });

  it("flags Apple's privacy proxy as a machine, and a person's second open as not the first", async () => {
    await get(`/t/o/${openToken(ctx(), emailId)}`, { 'user-agent': 'Mozilla/5.0' });
    await get(`/t/o/${openToken(ctx(), emailId)}`, { 'user-agent': CHROME });
    const details = (await events('opened')).map((e: { detail: unknown }) => e.detail);
    expect(details).toEqual([
      { user_agent_class: 'human', first: true },
      { user_agent_class: 'machine', first: true },
      { user_agent_class: 'human', first: false },
    ]);
  });

  it('a tracked link redirects to exactly the original URL and records the click', async () => {
    const res = await get(`/t/c/${clickToken(ctx(), emailId, 4, LINK)}`, { 'user-agent': CHROME });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(LINK);
    expect(await events('clicked')).toEqual([
      expect.objectContaining({
        detail: { user_agent_class: 'human', url: LINK, link_index: 4, first: true },
      }),
    ]);
    await eventually(() => expect(hooks.find((h) => h.type === 'email.clicked')?.data.event.url).toBe(LINK));
  });

  it('a tampered, re-targeted or unknown tracking token is a plain 404 that redirects nowhere', async () => {
    const token = clickToken(ctx(), emailId, 0, LINK);
    // the same token with its signed URL swapped for another of the same length
    const raw = Buffer.from(token, 'base64url');
    const retargeted = Buffer.from(
      raw.toString('latin1').replace('shop.example.com', 'evil.example.com'),
      'latin1',
    );
    for (const bad of [tamper(token), retargeted.toString('base64url'), openToken(ctx(), emailId), 'x']) {
      const res = await get(`/t/c/${bad}`, { 'user-agent': CHROME });
      expect(res.status).toBe(404);
      expect(res.headers.get('location')).toBeNull();
      expect(res.headers.get('content-type')).toMatch(/text\/plain/);
    }
    expect((await get(`/t/o/${tamper(openToken(ctx(), emailId))}`)).status).toBe(404);
    expect(await events('clicked')).toHaveLength(1);
    expect(await events('opened')).toHaveLength(3);
  });
});
