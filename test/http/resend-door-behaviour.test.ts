import { Resend } from 'resend';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { createKeyInProject } from '../../src/domain/keys/service.ts';
import { campaignMessages, insertVerifiedDomain } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { verifiedBySvix } from '../helpers/resend-sdk.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { type ReceivedHook, startWebhookReceiver } from '../helpers/webhook-receiver.ts';

/**
 * The Resend door where Resend's users rely on its behaviour (issue 51, item 2): `scheduled_at`
 * in emails.get, `from` as sent, per-domain open and click tracking (a setting of the sending
 * domain, shown and set on /v1 too, applied to transactional mail), Resend's merge tags in
 * broadcasts, Svix's header names and `email.sent` at hand-over on endpoints made through the
 * door, Resend's documented error names, and the paths answered 405 before the body is read.
 */

let server: TestServer;
let account: SignupResult;
let resend: Resend;
let key: string;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
const from = 'Door <hello@door.example>';

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  server = await startTestServer({ POSTHORN_WEBHOOK_ALLOW_PRIVATE: '1', POSTHORN_RATE_LIMIT: '1000' });
  account = await server.signupConfirmed();
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  await server.call('PATCH', '/v1/me/footer', {
    key: account.project_key.key,
    body: { address: 'Door Tests Ltd, 1 Quay Street, Bristol BS1 4DJ' },
  });
  await insertVerifiedDomain(server, account.project.id, 'door.example');
  const created = await createKeyInProject(
    server.runtime.ctx,
    { accountId: account.account.id },
    account.project.id,
    { name: 'Resend SDK', scope: 'all_access' },
  );
  key = created.key as string;
  resend = new Resend(key, { baseUrl: `${server.url}/resend` });
});

afterAll(async () => {
  await receiver?.close();
  await server?.close();
});

const raw = async (id: string) => {
  const res = await fetch(`${server.url}/v1/emails/${id}/raw`, {
    headers: { authorization: `Bearer ${account.project_key.key}` },
  });
  expect(res.status).toBe(200);
  // quoted-printable soft breaks joined, so links read whole
  return (await res.text()).replace(/=\r?\n/g, '').replace(/=3D/g, '=');
};

describe('emails', () => {
  it('says scheduled_at (null when not scheduled) and from as it was sent', async () => {
    const now = await resend.emails.send({ from, to: 'a@recipient.example', subject: 'Now', text: 'x' });
    const later = await resend.emails.send({
      from: '"Door Team" <hello@door.example>',
      to: 'b@recipient.example',
      subject: 'Later',
      text: 'x',
      scheduledAt: 'in 1 hour',
    });
    const got = await resend.emails.get(now.data?.id as string);
    expect(got.data).toMatchObject({ from, scheduled_at: null });
    expect(got.data && 'scheduled_at' in got.data).toBe(true);
    const scheduled = await resend.emails.get(later.data?.id as string);
    expect(scheduled.data?.scheduled_at).toEqual(expect.any(String));
    expect(scheduled.data?.from).toBe('Door Team <hello@door.example>');
    // a name that needs its quotes keeps them
    const dotted = await resend.emails.send({
      from: '"Door, Inc" <hello@door.example>',
      to: 'c@recipient.example',
      subject: 'Quoted',
      text: 'x',
    });
    expect((await resend.emails.get(dotted.data?.id as string)).data?.from).toBe(
      '"Door, Inc" <hello@door.example>',
    );
  });
});

describe('domains', () => {
  it('keeps open and click tracking per domain, on /v1 too, and tracks transactional mail from it', async () => {
    const added = await server.call('POST', '/v1/domains', {
      key: account.project_key.key,
      body: { domain: 'tracked.example' },
    });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    expect(added.body).toMatchObject({ open_tracking: false, click_tracking: false });
    const updated = await resend.domains.update({
      id: added.body.id,
      openTracking: true,
      clickTracking: true,
    });
    expect(updated.error).toBeNull();
    expect((await resend.domains.get(added.body.id)).data).toMatchObject({
      open_tracking: true,
      click_tracking: true,
    });
    const v1 = await server.call('GET', `/v1/domains/${added.body.id}`, { key: account.project_key.key });
    expect(v1.body).toMatchObject({ open_tracking: true, click_tracking: true });
    // /v1 sets it too, and refuses what is not a boolean
    const off = await server.call('PATCH', `/v1/domains/${added.body.id}`, {
      key: account.project_key.key,
      body: { open_tracking: false },
    });
    expect(off.body).toMatchObject({ open_tracking: false, click_tracking: true });
    const bad = await server.call('PATCH', `/v1/domains/${added.body.id}`, {
      key: account.project_key.key,
      body: { click_tracking: 'yes' },
    });
    expect(bad.status).toBe(400);
    await server.call('PATCH', `/v1/domains/${added.body.id}`, {
      key: account.project_key.key,
      body: { open_tracking: true },
    });

    await server.runtime.ctx.db
      .updateTable('domains')
      .set({ status: 'verified', verified_at: new Date() })
      .where('id', '=', added.body.id)
      .execute();
    const html = '<p>Read <a href="https://docs.example/guide">the guide</a>.</p>';
    const tracked = await resend.emails.send({
      from: 'Tracked <hi@tracked.example>',
      to: 'd@recipient.example',
      subject: 'Tracked',
      html,
    });
    const plain = await resend.emails.send({ from, to: 'e@recipient.example', subject: 'Plain', html });
    const trackedRaw = await raw(tracked.data?.id as string);
    expect(trackedRaw).toMatch(/\/t\/c\/[A-Za-z0-9_-]+/);
    expect(trackedRaw).toMatch(/\/t\/o\/[A-Za-z0-9_-]+/);
    // transactional mail carries no marketing footer
    expect(trackedRaw).not.toMatch(/Unsubscribe/);
    const plainRaw = await raw(plain.data?.id as string);
    expect(plainRaw).toContain('https://docs.example/guide');
    expect(plainRaw).not.toMatch(/\/t\/[co]\//);
  });
});

describe('broadcasts', () => {
  it("takes Resend's merge tags: a contact's fields, fallbacks and the unsubscribe link", async () => {
    const segment = await resend.segments.create({ name: 'Readers' });
    const segmentId = segment.data?.id as string;
    await resend.contacts.create({
      email: 'ada@readers.example',
      firstName: 'Ada',
      segments: [{ id: segmentId }],
    });
    await resend.contacts.create({
      email: 'bo@readers.example',
      properties: { plan: 'gold' },
      segments: [{ id: segmentId }],
    });
    const created = await resend.broadcasts.create({
      segmentId,
      from,
      name: 'Tags',
      subject: 'Hello {{{FIRST_NAME|there}}}',
      html: '<p>Hi {{{contact.first_name|friend}}} ({{{EMAIL}}}), plan {{{contact.plan|none}}}.</p><p><a href="{{{RESEND_UNSUBSCRIBE_URL}}}">Leave</a></p>',
    });
    expect(created.error).toBeNull();
    const id = created.data?.id as string;
    expect((await resend.broadcasts.send(id)).error).toBeNull();
    const messages = await eventually(
      () => {
        const found = campaignMessages(server.sink.messages, id);
        expect(found).toHaveLength(2);
        return found;
      },
      { timeoutMs: 30_000 },
    );
    const to = (address: string) => messages.find((m) => m.to.includes(address))?.parsed;
    const ada = to('ada@readers.example');
    const bo = to('bo@readers.example');
    expect(ada?.subject).toBe('Hello Ada');
    expect(bo?.subject).toBe('Hello there');
    expect(ada?.html).toContain('Hi Ada (ada@readers.example), plan none.');
    expect(bo?.html).toContain('Hi friend (bo@readers.example), plan gold.');
    expect(String(ada?.html)).toMatch(/<a href="[^"]*\/u\/[A-Za-z0-9_-]+">Leave<\/a>/);
    expect(String(ada?.html)).not.toContain('{{');
  });
});

describe('webhooks made through the door', () => {
  it('are sent email.sent at hand-over, then email.delivered, verified with only Svix headers', async () => {
    const created = await resend.webhooks.create({
      endpoint: receiver.url,
      events: ['email.sent', 'email.delivered', 'email.bounced'],
    });
    expect(created.error).toBeNull();
    const secret = created.data?.signing_secret as string;
    // the simulator answers at hand-over: the hop is the last, as the dev mailbox and a direct MX are
    const sent = await resend.emails.send({
      from,
      to: 'delivered@simulator.posthorn.test',
      subject: 'Handed over',
      text: 'Hi.',
    });
    const bounced = await resend.emails.send({
      from,
      to: 'bounced@simulator.posthorn.test',
      subject: 'Refused',
      text: 'Hi.',
    });
    const of = (emailId: string) => receiver.hooks.filter((h) => h.data.email_id === emailId);
    const hooks = await eventually(
      () => {
        const mine = of(sent.data?.id as string);
        expect(mine.map((h) => h.type).sort()).toEqual(['email.delivered', 'email.sent']);
        expect(
          of(bounced.data?.id as string)
            .map((h) => h.type)
            .sort(),
        ).toEqual(['email.bounced', 'email.sent']);
        return mine;
      },
      { timeoutMs: 30_000 },
    );
    const verify = (hook: ReceivedHook) => verifiedBySvix(resend, hook, secret);
    for (const hook of hooks) {
      expect(verify(hook)).toMatchObject({
        type: hook.type,
        data: {
          email_id: sent.data?.id,
          from,
          to: ['delivered@simulator.posthorn.test'],
          subject: 'Handed over',
        },
      });
      // the same signature under Standard Webhooks' names
      expect(hook.headers['svix-signature']).toBe(hook.headers['webhook-signature']);
      expect(
        new Webhook(secret).verify(hook.body, {
          'webhook-id': String(hook.headers['webhook-id']),
          'webhook-timestamp': String(hook.headers['webhook-timestamp']),
          'webhook-signature': String(hook.headers['webhook-signature']),
        }),
      ).toMatchObject({ type: hook.type });
    }
    // /v1 keeps Posthorn's events: a /v1 endpoint hears the simulator's delivery, not a made-up sent
    const v1 = await server.call('GET', `/v1/emails/${sent.data?.id}`, { key: account.project_key.key });
    expect(v1.body.events.map((e: { type: string }) => e.type)).not.toContain('sent');
  });
});

describe("Resend's error names and statuses", () => {
  const post = (path: string, body: unknown, headers: Record<string, string> = {}, k = key) =>
    server.call('POST', `/resend${path}`, { key: k, body, headers });

  it('answers a missing field, a bad from, a long idempotency key and a project key on /api-keys as Resend does', async () => {
    const missing = await post('/emails', { from, subject: 'S', text: 'x' });
    expect(missing.status).toBe(422);
    expect(missing.body).toMatchObject({ statusCode: 422, name: 'missing_required_field' });
    const badFrom = await post('/emails', {
      from: 'not an address',
      to: 'a@recipient.example',
      subject: 'S',
      text: 'x',
    });
    expect(badFrom.status).toBe(422);
    expect(badFrom.body).toMatchObject({ statusCode: 422, name: 'invalid_from_address' });
    const batchFrom = await post('/emails/batch', [
      { from, to: 'a@recipient.example', subject: 'S', text: 'x' },
      { from: 'nobody', to: 'a@recipient.example', subject: 'S', text: 'x' },
    ]);
    expect(batchFrom.body).toMatchObject({ statusCode: 422, name: 'invalid_from_address' });
    const longKey = await post(
      '/emails',
      { from, to: 'a@recipient.example', subject: 'S', text: 'x' },
      { 'idempotency-key': 'k'.repeat(257) },
    );
    expect(longKey.status).toBe(400);
    expect(longKey.body).toMatchObject({ statusCode: 400, name: 'invalid_idempotency_key' });
    const restricted = await server.call('GET', '/resend/api-keys', { key: account.project_key.key });
    expect(restricted.status).toBe(401);
    expect(restricted.body).toMatchObject({ statusCode: 401, name: 'restricted_api_key' });
    // /v1 keeps its own errors
    const v1 = await server.call('POST', '/v1/emails', {
      key: account.project_key.key,
      body: { from, subject: 'S', text: 'x' },
    });
    expect(v1.status).toBe(400);
    expect(v1.body).toEqual({ error: expect.any(String) });
  });

  it('answers a 405 before reading the body (a multipart one too), naming what to use; /emails/receiving is not /emails/:id', async () => {
    // defining a contact property ahead is what Posthorn has no place for (unsupported.ts)
    const form = new FormData();
    form.append('key', 'company');
    const defined = await fetch(`${server.url}/resend/contact-properties`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
    expect(defined.status).toBe(405);
    expect(await defined.json()).toMatchObject({
      name: 'method_not_allowed',
      message: /PATCH \/contacts\/\{id\} with `properties`/,
    });
    // received mail is its own resource, not matched as /emails/:id
    const receiving = await server.call('GET', '/resend/emails/receiving', { key });
    expect(receiving.status).toBe(200);
    expect(receiving.body).toMatchObject({ object: 'list' });
    const one = await server.call('GET', '/resend/emails/receiving/0b8e4c4e-3c1a-4a53-8c55-6f9a3f0e2d11', {
      key,
    });
    expect(one.status).toBe(404);
  });
});
