import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { expectError } from '../helpers/assertions.ts';
import { FROM } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The dev mailbox over HTTP (issue 30, item 4): GET /api/mailbox, /api/mailbox/{id} (decoded) and
 * /api/mailbox/{id}/raw, read without signing in, only while mail is captured (no relay), and by
 * default only by a client on this machine. A client elsewhere is simulated with inject's
 * `remoteAddress`: nothing leaves the machine.
 */

const NO_RELAY = { POSTHORN_SMTP_RELAY: '' };
const ELSEWHERE = ['203.0.113.7', '2001:db8::1', '10.1.2.3'];
const CODE = /code(?: is)?: ([A-Z0-9]{6})/;

/** A request as a client at `remoteAddress` would send it. */
async function from(server: TestServer, remoteAddress: string, url: string) {
  const res = await server.app.inject({ method: 'GET', url, remoteAddress });
  const body = res.headers['content-type']?.includes('json') ? res.json() : res.body;
  return { status: res.statusCode, body, headers: res.headers };
}

/** The newest captured message to `address` whose subject matches, once the worker has captured it. */
async function captured(server: TestServer, address: string, subject: RegExp) {
  return eventually(
    async () => {
      const res = await server.call('GET', `/api/mailbox?to=${encodeURIComponent(address)}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const found = res.body.data.find((m: { subject: string | null }) => subject.test(m.subject ?? ''));
      expect(found, `no message to ${address} matching ${subject}`).toBeDefined();
      return found;
    },
    { timeoutMs: 60_000, intervalMs: 100, message: `waiting for mail to ${address} in the dev mailbox` },
  );
}

/** Confirms a new account with the code from its signup email, read in the dev mailbox. */
async function confirmThroughMailbox(server: TestServer, account: SignupResult) {
  const summary = await captured(server, account.account.email, /code/i);
  const message = await server.call('GET', `/api/mailbox/${summary.id}`);
  const code = CODE.exec(message.body.text)?.[1];
  expect(code, message.body.text).toMatch(/^[A-Z0-9]{6}$/);
  const verified = await server.call('POST', '/v1/auth/verify-email/code', {
    key: account.project_key.key,
    body: { code },
  });
  expect(verified.status, JSON.stringify(verified.body)).toBe(200);
}

describe('with no relay, a client on this machine', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(NO_RELAY);
  });
  afterAll(() => server?.close());

  it('is told the dev mailbox is available, and the OpenAPI document lists its routes under dashboard', async () => {
    const status = await server.call('GET', '/api/mailbox/status');
    expect(status.status).toBe(200);
    expect(status.body).toEqual({ available: true, reason: null });

    const doc = (await server.call('GET', '/v1/openapi.json')).body;
    for (const p of ['/api/mailbox/status', '/api/mailbox', '/api/mailbox/{id}', '/api/mailbox/{id}/raw']) {
      expect(doc.paths[p]?.get?.tags, p).toEqual(['dashboard']);
      expect(doc.paths[p].get.summary, p).toEqual(expect.any(String));
      expect(doc.paths[p].get.security, p).toEqual([]);
    }
  });

  it('lists captured mail newest first, finds it by recipient, and reads the signup code without signing in', async () => {
    // one after the other: the mailbox orders by capture time
    const first = await server.signup({ email: `first-${Date.now()}@example.com` });
    const firstMail = await captured(server, first.account.email, /code/i);
    const second = await server.signup({ email: `second-${Date.now()}@example.com` });
    const secondMail = await captured(server, second.account.email, /code/i);

    const all = await server.call('GET', '/api/mailbox');
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ limit: 25, offset: 0 });
    expect(all.body.total).toBeGreaterThanOrEqual(2);
    const ids = all.body.data.map((m: { id: string }) => m.id);
    expect(ids.indexOf(secondMail.id)).toBeLessThan(ids.indexOf(firstMail.id));
    expect(firstMail).toEqual({
      id: expect.any(String),
      object: 'mailbox_message',
      message_id: expect.stringMatching(/^<.+@.+>$/),
      envelope: { from: expect.any(String), to: [first.account.email] },
      subject: expect.stringMatching(/code/i),
      size_bytes: expect.any(Number),
      created_at: expect.any(String),
    });

    // a part of the address, in any case, finds it; paging counts what the search keeps
    const search = await server.call(
      'GET',
      `/api/mailbox?to=${first.account.email.slice(0, 12).toUpperCase()}`,
    );
    expect(search.body.data.map((m: { id: string }) => m.id)).toEqual([firstMail.id]);
    expect(search.body.total).toBe(1);
    const none = await server.call('GET', '/api/mailbox?to=%25');
    expect(none.body).toMatchObject({ data: [], total: 0 });
    const secondPage = await server.call('GET', '/api/mailbox?limit=1&offset=1');
    expect(secondPage.body.data).toHaveLength(1);
    expect(secondPage.body.data[0].id).toBe(ids[1]);

    const read = await server.call('GET', `/api/mailbox/${firstMail.id}`);
    expect(read.status).toBe(200);
    const m = read.body;
    expect(m.to).toEqual([first.account.email]);
    expect(m.from).toMatch(/no-reply@posthorn\.localhost/);
    expect(m.date).toEqual(expect.any(String));
    expect(m.headers).toContainEqual({ name: 'Subject', value: m.subject });
    expect(m.headers).toContainEqual({ name: 'Message-ID', value: firstMail.message_id });
    const code = CODE.exec(m.text)?.[1];
    expect(code, m.text).toMatch(/^[A-Z0-9]{6}$/);
    const verified = await server.call('POST', '/v1/auth/verify-email/code', {
      key: first.project_key.key,
      body: { code },
    });
    expect(verified.status, JSON.stringify(verified.body)).toBe(200);
  });

  it('decodes a quoted-printable message with soft line breaks, encoded words and an attachment', async () => {
    const account = await server.signup();
    await confirmThroughMailbox(server, account);
    const key = account.project_key.key;
    const to = `reader-${Date.now()}@example.org`;
    const text = `Grüße! ${'This line is far longer than seventy-six characters, so it must be wrapped. '.repeat(3)}Your code: K7Q2ZP`;
    const html = `<p>Grüße, <strong>K7Q2ZP</strong> ${'is the code you asked for. '.repeat(5)}</p>`;
    const sent = await server.call('POST', '/v1/emails', {
      key,
      body: { from: FROM, to, subject: 'Grüße — your code', text, html },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const summary = await captured(server, to, /your code/);
    expect(summary.subject).toBe('Grüße — your code');

    const raw = await server.call('GET', `/api/mailbox/${summary.id}/raw`);
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toMatch(/^message\/rfc822/);
    expect(raw.body).toMatch(/=\r\n/); // soft line breaks
    expect(raw.body).toMatch(/Gr=C3=BC=C3=9Fe/);
    expect(raw.body).toMatch(/^Subject: =\?UTF-8\?/im);

    const read = await server.call('GET', `/api/mailbox/${summary.id}`);
    expect(read.status).toBe(200);
    expect(read.body.subject).toBe('Grüße — your code');
    expect(read.body.text.trimEnd()).toBe(text);
    expect(read.body.html).toContain(html);
    expect(read.body.attachments).toEqual([]);
    expect(read.body.size_bytes).toBe(Buffer.byteLength(raw.body));

    const withFile = await server.call('POST', '/v1/emails', {
      key,
      body: {
        from: FROM,
        to,
        subject: 'Notes attached',
        text: 'See the notes.',
        attachments: [
          {
            filename: 'notes.txt',
            content: Buffer.from('a'.repeat(1234)).toString('base64'),
            content_type: 'text/plain',
          },
        ],
      },
    });
    expect(withFile.status).toBe(200);
    const attached = await captured(server, to, /Notes attached/);
    const decoded = (await server.call('GET', `/api/mailbox/${attached.id}`)).body;
    expect(decoded.attachments).toEqual([{ filename: 'notes.txt', content_type: 'text/plain', size: 1234 }]);
    expect(decoded.text.trim()).toBe('See the notes.');
  });

  it('answers 404 with {error} for an id that is not there or cannot be one, and 400 for a bad page', async () => {
    for (const id of [randomUUID(), 'not-an-id', '12345']) {
      expectError(await server.call('GET', `/api/mailbox/${id}`), 404, /Mailbox message not found/);
      expectError(await server.call('GET', `/api/mailbox/${id}/raw`), 404, /Mailbox message not found/);
    }
    expectError(await server.call('GET', '/api/mailbox?limit=0'), 400, /`limit`/);
    expectError(await server.call('GET', '/api/mailbox?limit=101'), 400, /`limit`/);
    expectError(await server.call('GET', `/api/mailbox?to=${'x'.repeat(300)}`), 400, /`to`/);
  });

  it('serves every loopback address (127.0.0.0/8, ::1, IPv4-mapped)', async () => {
    for (const address of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) {
      const res = await from(server, address, '/api/mailbox');
      expect(res.status, address).toBe(200);
    }
  });
});

describe('with no relay, a client elsewhere', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(NO_RELAY, ['api']);
  });
  afterAll(() => server?.close());

  it('is told it is shown only on this machine, and every mailbox route is a 404 saying so', async () => {
    const only =
      /shown only on this machine: open the dashboard at http:\/\/127\.0\.0\.1.*\/mailbox.*POSTHORN_DEV_MAILBOX=open/;
    for (const address of ELSEWHERE) {
      const status = await from(server, address, '/api/mailbox/status');
      expect(status.status).toBe(200);
      expect(status.body.available).toBe(false);
      expect(status.body.reason).toMatch(only);
      for (const url of [
        '/api/mailbox',
        `/api/mailbox/${randomUUID()}`,
        '/api/mailbox/bad/raw',
        '/api/mailbox?limit=0',
      ])
        expectError(await from(server, address, url), 404, only);
    }
  });

  it('counts a forwarded request as elsewhere when POSTHORN_TRUST_PROXY is off (a proxy on this host)', async () => {
    for (const header of ['x-forwarded-for', 'forwarded', 'x-real-ip']) {
      const res = await server.call('GET', '/api/mailbox', { headers: { [header]: '127.0.0.1' } });
      expectError(res, 404, /shown only on this machine/);
    }
  });
});

describe('behind a trusted proxy', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ ...NO_RELAY, POSTHORN_TRUST_PROXY: 'loopback' }, ['api']);
  });
  afterAll(() => server?.close());

  it('judges the client the proxy names', async () => {
    const remote = await server.call('GET', '/api/mailbox', {
      headers: { 'x-forwarded-for': '198.51.100.4' },
    });
    expectError(remote, 404, /shown only on this machine/);
    const local = await server.call('GET', '/api/mailbox', { headers: { 'x-forwarded-for': '127.0.0.1' } });
    expect(local.status).toBe(200);
  });
});

describe('when the dev mailbox is not there to read', () => {
  let relay: TestServer;
  let off: TestServer;
  let open: TestServer;
  beforeAll(async () => {
    relay = await startTestServer({}, ['api']);
    off = await startTestServer({ ...NO_RELAY, POSTHORN_DEV_MAILBOX: 'off' }, ['api']);
    open = await startTestServer({ ...NO_RELAY, POSTHORN_DEV_MAILBOX: 'open' }, ['api']);
  });
  afterAll(async () => {
    await Promise.all([relay?.close(), off?.close(), open?.close()]);
  });

  it('is a 404 on a server whose mail goes to a relay, even on this machine', async () => {
    const status = await relay.call('GET', '/api/mailbox/status');
    expect(status.body).toEqual({
      available: false,
      reason: expect.stringMatching(/relay of POSTHORN_SMTP_RELAY/),
    });
    for (const url of ['/api/mailbox', `/api/mailbox/${randomUUID()}`, `/api/mailbox/${randomUUID()}/raw`])
      expectError(await relay.call('GET', url), 404, /no dev mailbox on this server/);
  });

  it('is a 404 with POSTHORN_DEV_MAILBOX=off, even on this machine', async () => {
    const status = await off.call('GET', '/api/mailbox/status');
    expect(status.body).toEqual({
      available: false,
      reason: expect.stringMatching(/POSTHORN_DEV_MAILBOX=off/),
    });
    expectError(await off.call('GET', '/api/mailbox'), 404, /POSTHORN_DEV_MAILBOX=off.*npx posthorn mailbox/);
  });

  it('is served to a client elsewhere with POSTHORN_DEV_MAILBOX=open', async () => {
    const status = await from(open, ELSEWHERE[0], '/api/mailbox/status');
    expect(status.body).toEqual({ available: true, reason: null });
    const list = await from(open, ELSEWHERE[0], '/api/mailbox');
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ data: expect.any(Array), limit: 25, offset: 0 });
    expectError(
      await from(open, ELSEWHERE[0], `/api/mailbox/${randomUUID()}`),
      404,
      /Mailbox message not found/,
    );
  });

  it('POSTHORN_DEV_MAILBOX takes local, open or off, and names them when it is anything else', () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'posthorn-mailbox-config-'));
    try {
      const load = (value?: string) =>
        loadConfig({
          POSTHORN_DATA_DIR: dataDir,
          ...(value === undefined ? {} : { POSTHORN_DEV_MAILBOX: value }),
        });
      expect(load().devMailboxAccess).toBe('local');
      expect(load('OPEN').devMailboxAccess).toBe('open');
      expect(load('off').devMailboxAccess).toBe('off');
      expect(() => load('public')).toThrow(ConfigError);
      expect(() => load('public')).toThrow(
        /POSTHORN_DEV_MAILBOX must be local .* open .* or off, got "public"/,
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
