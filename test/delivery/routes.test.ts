import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import {
  FROM,
  insertVerifiedDomain,
  sharedDkimResolver,
  waitForStatus,
  waitForSystemEmail,
} from '../helpers/emails.ts';
import {
  type SignupResult,
  signupConfirmedInDatabase,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';
import { type SmtpSink, startSmtpSink } from '../helpers/smtp-sink.ts';

const root = path.resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-routes-'));
const routesFile = (name: string, content: unknown) => {
  const file = path.join(dir, name);
  writeFileSync(file, JSON.stringify(content, null, 2));
  return file;
};

let first: SmtpSink;
let second: SmtpSink;
let server: TestServer;
let account: SignupResult;
let key: string;
beforeAll(async () => {
  [first, second] = await Promise.all([startSmtpSink(), startSmtpSink()]);
  const file = routesFile('routes.json', {
    routes: {
      first: {
        type: 'smtp',
        url: first.url,
        pool_size: 2,
        timeout_seconds: 20,
        tags: 'ses',
        configuration_set: 'posthorn-test',
      },
      second: { type: 'smtp', url: second.url, tags: 'postmark' },
      dev: { type: 'mailbox' },
    },
    rules: [
      { match: { recipient_domain: 'routed.example.net' }, routes: ['second', 'first'] },
      { match: { domain: 'news.routed.test' }, routes: ['second'] },
      { match: { stream: 'transactional' }, routes: ['first'] },
      { match: {}, routes: ['dev'] },
    ],
  });
  // with a routes file, the relay is a route in it: the helper's relay is not set
  server = await startTestServer({ POSTHORN_ROUTES: file, POSTHORN_SMTP_RELAY: '' });
  account = await signupConfirmedInDatabase(server);
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  await insertVerifiedDomain(server, account.project.id, 'news.routed.test');
});
afterAll(async () => {
  await server?.close();
  await Promise.all([first?.close(), second?.close()]);
  rmSync(dir, { recursive: true, force: true });
});

const send = (to: string | string[], subject: string) =>
  server.call('POST', '/v1/emails', { key, body: { from: FROM, to, subject, html: '<p>Routed</p>' } });

const arrivals = (sink: SmtpSink, messageId: string) =>
  sink.messages.filter((m) => m.parsed.messageId === messageId).length;

describe('routes chosen by the rules of POSTHORN_ROUTES', () => {
  it('sends transactional mail through its route and a recipient domain through another, each once', async () => {
    const [plain, routed, mixed] = await Promise.all([
      send('someone@example.org', 'By stream'),
      send('someone@routed.example.net', 'By recipient domain'),
      // a message is routed by its first recipient: both of these leave through the second route
      send(['else@routed.example.net', 'other@example.org'], 'By first recipient'),
    ]);
    const [byStream, byDomain, byFirst] = await Promise.all(
      [plain, routed, mixed].map((res) => waitForStatus(server, key, res.body.id, 'sent')),
    );
    await first.waitFor((m) => m.parsed.messageId === byStream.message_id);
    await second.waitFor((m) => m.parsed.messageId === byDomain.message_id);
    await second.waitFor((m) => m.parsed.messageId === byFirst.message_id);

    expect([arrivals(first, byStream.message_id), arrivals(second, byStream.message_id)]).toEqual([1, 0]);
    expect([arrivals(first, byDomain.message_id), arrivals(second, byDomain.message_id)]).toEqual([0, 1]);
    expect([arrivals(first, byFirst.message_id), arrivals(second, byFirst.message_id)]).toEqual([0, 1]);
    expect(second.messages.find((m) => m.parsed.messageId === byFirst.message_id)?.to.sort()).toEqual([
      'else@routed.example.net',
      'other@example.org',
    ]);
    // the events and statuses are those of any relay: a sent event per recipient
    for (const email of [byStream, byDomain])
      expect(email.events.map((e: { type: string }) => e.type)).toEqual(['queued', 'sent']);
    expect(byFirst.events.map((e: { type: string }) => e.type)).toEqual(['queued', 'sent', 'sent']);
    // each route's provider tags, in its dialect, in front of the signed message
    const header = (sink: SmtpSink, messageId: string, name: string) =>
      sink.messages.find((m) => m.parsed.messageId === messageId)?.parsed.headers.get(name);
    const project = account.project.id;
    expect(header(first, byStream.message_id, 'x-ses-message-tags')).toBe(
      `posthorn_email=${byStream.id}, posthorn_project=${project}, posthorn_stream=transactional`,
    );
    expect(header(first, byStream.message_id, 'x-ses-configuration-set')).toBe('posthorn-test');
    expect(header(second, byDomain.message_id, 'x-pm-tag')).toBe('transactional');
    expect(header(second, byDomain.message_id, 'x-pm-metadata-email')).toBe(byDomain.id);
    expect(header(second, byDomain.message_id, 'x-pm-metadata-project')).toBe(project);
    expect(header(second, byDomain.message_id, 'x-ses-message-tags')).toBeUndefined();
    const signed = first.messages.find((m) => m.parsed.messageId === byStream.message_id)?.raw.toString();
    expect(signed?.indexOf('X-SES-MESSAGE-TAGS:')).toBe(0);
    expect(signed).toMatch(/\r\nDKIM-Signature: /);
    // the tags are outside the signature: the message still passes DKIM as it arrives
    const verified = await dkimVerify(Buffer.from(signed ?? ''), {
      resolver: (await sharedDkimResolver(server)).resolver,
    });
    expect(verified.results[0].status.result).toBe('pass');
    expect(server.sink.messages).toHaveLength(0);
    const mailbox = await server.runtime.ctx.db.selectFrom('mailbox_messages').select('id').execute();
    expect(mailbox).toHaveLength(0);
  });

  it('sends mail from a sending domain through the route its rule names', async () => {
    const res = await server.call('POST', '/v1/emails', {
      key,
      body: {
        from: 'News <hello@news.routed.test>',
        to: 'someone@example.org',
        subject: 'By domain',
        text: 'x',
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const email = await waitForStatus(server, key, res.body.id, 'sent');
    await second.waitFor((m) => m.parsed.messageId === email.message_id);
    expect([arrivals(first, email.message_id), arrivals(second, email.message_id)]).toEqual([0, 1]);
    // the postmark dialect names the message and its stream
    const arrived = second.messages.find((m) => m.parsed.messageId === email.message_id);
    expect(arrived?.parsed.headers.get('x-pm-metadata-email')).toBe(email.id);
  });

  it("routes the service's own mail as transactional mail", async () => {
    const res = await server.call('POST', '/v1/signup', {
      body: { email: `routed-${Date.now()}@example.com`, name: 'Routed', accept_terms: true },
    });
    expect(res.status).toBe(200);
    const email = res.body.account.email as string;
    await waitForSystemEmail(server, email, 'sent');
    await first.waitFor((m) => m.to.includes(email));
    expect(second.messages.filter((m) => m.to.includes(email))).toHaveLength(0);
  });
});

describe('a bad routes file', () => {
  it('stops the start with the problems, each named by its key path', () => {
    const file = routesFile('bad.json', {
      routes: {
        relay: { type: 'smtp', url: 'http://relay.example.net' },
        ses: { type: 'ses', region: 'Ireland', access_key_id: 'a', secret_access_key: 'b' },
      },
      rules: [{ match: { stream: 'transactional' }, routes: ['x'] }],
    });
    const run = spawnSync(process.execPath, ['bin/posthorn.js', 'start'], {
      cwd: root,
      timeout: 30_000,
      encoding: 'utf8',
      env: {
        ...process.env,
        POSTHORN_ROUTES: file,
        POSTHORN_SMTP_RELAY: '',
        POSTHORN_DATA_DIR: dir,
        DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
        PORT: '0',
      },
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`posthorn: configuration error: POSTHORN_ROUTES: ${file} has 4 problem(s):`);
    expect(run.stderr).toContain('routes.relay.url: must be smtp:// or smtps://');
    expect(run.stderr).toContain('routes.ses.region: must be an AWS region like eu-west-1');
    expect(run.stderr).toContain('rules[0].routes[0]: no route named "x"');
    expect(run.stderr).toContain('rules[0].match: the last rule must match every message');
  });
});
