import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { FROM, sharedDkimResolver, waitForCampaignStatus, waitForStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import {
  type SignupResult,
  signupConfirmedInDatabase,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';
import { type SesLocal, startSes } from '../helpers/ses.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-ses-route-'));

/** A port nothing listens on: an SES endpoint that refuses every connection. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

let ses: SesLocal;
let server: TestServer;
let account: SignupResult;
let key: string;
beforeAll(async () => {
  ses = await startSes();
  const file = path.join(dir, 'routes.json');
  const credentials = { region: 'eu-west-1', access_key_id: 'AKIDTEST', secret_access_key: 'secret' };
  writeFileSync(
    file,
    JSON.stringify({
      routes: {
        ses: { type: 'ses', ...credentials, endpoint: ses.endpoint, configuration_set: 'posthorn-test' },
        down: { type: 'ses', ...credentials, endpoint: `http://127.0.0.1:${await closedPort()}` },
        dev: { type: 'mailbox' },
      },
      rules: [
        { match: { recipient_domain: 'ses.example.net' }, routes: ['ses'] },
        { match: { recipient_domain: 'down.example.net' }, routes: ['down'] },
        { match: {}, routes: ['dev'] },
      ],
    }),
  );
  server = await startTestServer({ POSTHORN_ROUTES: file, POSTHORN_SMTP_RELAY: '' });
  account = await signupConfirmedInDatabase(server);
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
});
afterAll(async () => {
  await server?.close();
  await ses?.close();
  rmSync(dir, { recursive: true, force: true });
});

const send = (to: string | string[], subject: string) =>
  server.call('POST', '/v1/emails', { key, body: { from: FROM, to, subject, html: '<p>Through SES</p>' } });

describe('an ses route (Amazon SES v2 API, aws-ses-v2-local)', () => {
  it('hands the signed bytes to SES with the envelope, the provider tags and the configuration set', async () => {
    const res = await send(['reader@ses.example.net', 'second@ses.example.net'], 'Through SES');
    expect(res.status).toBe(200);
    const email = await waitForStatus(server, key, res.body.id, 'sent');
    const request = await ses.waitForMessage(email.message_id);

    expect(request.body.FromEmailAddress).toMatch(/^bounces\+[0-9a-f]+@posthorn\.localhost$/);
    expect(request.body.Destination?.ToAddresses).toEqual([
      'reader@ses.example.net',
      'second@ses.example.net',
    ]);
    expect(request.body.ConfigurationSetName).toBe('posthorn-test');
    expect(request.body.EmailTags).toEqual([
      { Name: 'posthorn_email', Value: email.id },
      { Name: 'posthorn_project', Value: account.project.id },
      { Name: 'posthorn_stream', Value: 'transactional' },
    ]);
    // the bytes are the signed message itself: no tag header in front, and DKIM passes as sent
    const raw = request.raw as Buffer;
    expect(raw.toString('latin1')).toMatch(/^DKIM-Signature: /);
    expect(raw.toString('latin1')).not.toMatch(/X-SES-/i);
    const verified = await dkimVerify(raw, { resolver: (await sharedDkimResolver(server)).resolver });
    expect(verified.results[0].status.result).toBe('pass');

    // SES stored it, and its MessageId is on the email's sent events, where its feedback finds it
    const stored = (await ses.stored()).find((m) => m.subject === 'Through SES');
    // (it reads the message's own headers: the To line as written)
    expect(stored?.from).toContain('onboarding@posthorn.localhost');
    expect(stored?.destination.to.join(', ')).toBe('reader@ses.example.net, second@ses.example.net');
    const sent = email.events.filter((e: { type: string }) => e.type === 'sent');
    expect(sent.map((e: { recipient: string }) => e.recipient)).toEqual([
      'reader@ses.example.net',
      'second@ses.example.net',
    ]);
    for (const event of sent)
      expect(event.detail).toEqual({
        response: `SES accepted the message: MessageId ${stored?.messageId}`,
        provider_message_id: stored?.messageId,
      });
    expect(email.last_response).toBe(`SES accepted the message: MessageId ${stored?.messageId}`);
    // nothing went to the other routes (the dev mailbox holds only the signup's code)
    const mailbox = await server.runtime.ctx.db
      .selectFrom('mailbox_messages')
      .select('id')
      .where('message_id', '=', email.message_id)
      .execute();
    expect(mailbox).toHaveLength(0);
    expect(ses.requests).toHaveLength(1);
  });

  it('sends marketing mail through it with the campaign in the tags', async () => {
    // a broadcast to one contact: the campaign and its stream are in the tags SES gets
    const footer = await server.call('PATCH', '/v1/me/footer', {
      key,
      body: { address: 'Posthorn Tests Ltd, 2 High Street, Leeds LS1 1AA' },
    });
    expect(footer.status).toBe(200);
    const list = (await server.call('POST', '/v1/lists', { key, body: { name: 'SES readers' } })).body.id;
    await server.call('POST', '/v1/contacts', { key, body: { email: 'fan@ses.example.net' } });
    await server.call('POST', `/v1/lists/${list}/contacts`, {
      key,
      body: { emails: ['fan@ses.example.net'] },
    });
    const created = await server.call('POST', '/v1/campaigns', {
      key,
      body: { name: 'SES news', from: FROM, subject: 'SES news', html: '<p>News</p>', list_ids: [list] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const started = await server.call('POST', `/v1/campaigns/${created.body.id}/send`, { key });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    await waitForCampaignStatus(server, key, created.body.id, 'sent');
    const request = await eventually(
      () => {
        const found = ses.requests.find((r) => r.body.EmailTags?.some((t) => t.Value === created.body.id));
        if (!found)
          throw new Error(`${ses.requests.length} SendEmail call(s), none tagged with the campaign`);
        return found;
      },
      { timeoutMs: 20_000, message: "the campaign's message did not reach SES" },
    );
    const tags = Object.fromEntries((request.body.EmailTags ?? []).map((t) => [t.Name, t.Value]));
    expect(tags).toMatchObject({
      posthorn_project: account.project.id,
      posthorn_stream: 'marketing',
      posthorn_campaign: created.body.id,
    });
    expect(request.body.Destination?.ToAddresses).toEqual(['fan@ses.example.net']);
  });

  it('defers a message when SES cannot be reached, naming SES in the response', async () => {
    const res = await send('someone@down.example.net', 'SES is down');
    const email = await waitForStatus(server, key, res.body.id, 'deferred');
    expect(email.last_response).toMatch(/^SES did not take the message: /);
    expect(email.events.map((e: { type: string }) => e.type)).toEqual(['queued', 'deferred']);
  });
});
