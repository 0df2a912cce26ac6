import { randomBytes } from 'node:crypto';
import { Resend } from 'resend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { createKeyInProject } from '../../src/domain/keys/service.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { deliverToMx } from '../helpers/smtp-clients.ts';
import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';

/**
 * The Resend door's events, automations and runs, logs, received emails and their attachments,
 * suppressions, webhook secret rotation and webhook events (issue 51, build item 1), driven by the
 * official `resend` SDK with only its base URL changed, over Posthorn's tracked events, flows and
 * enrollments, request log, inbound mail, suppression list and delivery log.
 */

let server: TestServer;
let account: SignupResult;
let resend: Resend;
let key: string;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;

/** What the SDK returned, when it returned no error. */
async function ok<T extends { data: unknown; error: unknown }>(
  p: Promise<T>,
): Promise<NonNullable<T['data']>> {
  const result = await p;
  expect(result.error, JSON.stringify(result.error)).toBeNull();
  return result.data as NonNullable<T['data']>;
}

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  server = await startTestServer(
    {
      POSTHORN_WEBHOOK_ALLOW_PRIVATE: '1',
      POSTHORN_WEBHOOK_SCHEDULE: '0,1,1,1',
      POSTHORN_SMTP_PORT: '0',
      POSTHORN_MX_PORT: '0',
    },
    ['api', 'worker', 'smtp'],
  );
  account = await server.signupConfirmed();
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  // automation mail needs the sender's postal address (the flow below is activated)
  await server.call('PATCH', '/v1/me/footer', {
    key: account.project_key.key,
    body: { address: 'Door Tests Ltd, 1 Quay Street, Bristol BS1 4DJ' },
  });
  key = (
    await createKeyInProject(server.runtime.ctx, { accountId: account.account.id }, account.project.id, {
      name: 'Resend SDK, more',
      scope: 'all_access',
    })
  ).key as string;
  resend = new Resend(key, { baseUrl: `${server.url}/resend` });
}, 60_000);
afterAll(async () => {
  await server?.close();
  await receiver?.close();
});

describe('suppressions', () => {
  it('adds, lists by origin and page, gets by id or address, removes, and batches', async () => {
    const added = await ok(resend.suppressions.add({ email: 'Gone@Example.com' }));
    expect(added).toMatchObject({ object: 'suppression', id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    const got = await ok(resend.suppressions.get(added.id));
    expect(got).toMatchObject({
      object: 'suppression',
      id: added.id,
      email: 'gone@example.com',
      origin: 'manual',
    });
    expect(await ok(resend.suppressions.get('gone@example.com'))).toEqual(got);
    // the same list /v1 reads
    const v1 = await server.call('GET', '/v1/suppressions', { key: account.project_key.key });
    expect(v1.body.data).toMatchObject([{ email: 'gone@example.com', reason: 'manual' }]);

    const batch = await ok(resend.suppressions.batch.add({ emails: ['a@example.com', 'b@example.com'] }));
    expect(batch.data).toHaveLength(2);
    const first = await ok(resend.suppressions.list({ limit: 2 }));
    expect(first).toMatchObject({ object: 'list', has_more: true });
    const rest = await ok(resend.suppressions.list({ limit: 2, after: first.data[1].id }));
    expect([...first.data, ...rest.data].map((s) => s.email).sort()).toEqual([
      'a@example.com',
      'b@example.com',
      'gone@example.com',
    ]);
    expect((await ok(resend.suppressions.list({ origin: 'bounce' }))).data).toEqual([]);

    const removed = await ok(resend.suppressions.remove(added.id));
    expect(removed).toEqual({ object: 'suppression', id: added.id, deleted: true });
    const gone = await resend.suppressions.get(added.id);
    expect(gone.error).toMatchObject({ statusCode: 404, name: 'not_found' });
    const batchRemoved = await ok(
      resend.suppressions.batch.remove({ emails: ['a@example.com', 'b@example.com'] }),
    );
    expect(batchRemoved.data.map((d) => d.deleted)).toEqual([true, true]);
    expect((await ok(resend.suppressions.list())).data).toEqual([]);
    // a bad address is Resend's validation error, and nothing is written
    const bad = await resend.suppressions.batch.add({ emails: ['c@example.com', 'not an address'] });
    expect(bad.error).toMatchObject({ statusCode: 400, name: 'validation_error' });
    expect((await ok(resend.suppressions.list())).data).toEqual([]);
  });
});

describe('events and automations', () => {
  it('sends events, lists their names, and runs the automation the event triggers', async () => {
    const flow = await server.call('POST', '/v1/flows', {
      key: account.project_key.key,
      body: {
        name: 'Welcome',
        trigger: { type: 'event', event: 'signed_up' },
        steps: [{ id: 'pause', type: 'wait', duration_seconds: 3600 }],
        status: 'active',
      },
    });
    expect(flow.status, JSON.stringify(flow.body)).toBe(200);

    const sent = await ok(
      resend.events.send({ event: 'signed_up', email: 'ada@example.com', payload: { plan: 'pro' } }),
    );
    expect(sent).toEqual({ object: 'event', event: 'signed_up' });
    const contact = await ok(resend.contacts.get({ email: 'ada@example.com' }));
    await ok(resend.events.send({ event: 'upgraded', contactId: contact.id }));
    const names = await ok(resend.events.list());
    expect(names.data.map((e) => e.name)).toEqual(['signed_up', 'upgraded']);
    const byId = await ok(resend.events.get(names.data[0].id));
    expect(byId).toMatchObject({ object: 'event', id: names.data[0].id, name: 'signed_up' });
    expect(await ok(resend.events.get('signed_up'))).toEqual(byId);
    const page = await ok(resend.events.list({ limit: 1, after: names.data[0].id }));
    expect(page).toMatchObject({ has_more: false, data: [{ name: 'upgraded' }] });
    // Posthorn keeps no event definitions: creating one is a 405 naming what to do instead
    const create = await resend.events.create({ name: 'defined' });
    expect(create.error).toMatchObject({ statusCode: 405, name: 'method_not_allowed' });
    expect(create.error?.message).toContain('/events/send');

    const list = await ok(resend.automations.list());
    expect(list.data).toMatchObject([{ id: flow.body.id, name: 'Welcome', status: 'enabled' }]);
    expect((await ok(resend.automations.list({ status: 'disabled' }))).data).toEqual([]);
    const automation = await ok(resend.automations.get(flow.body.id));
    expect(automation).toMatchObject({
      object: 'automation',
      steps: [
        { key: 'trigger', type: 'trigger', config: { event_name: 'signed_up' } },
        { key: 'pause', type: 'delay', config: { duration: '3600 seconds' } },
      ],
      connections: [{ from: 'trigger', to: 'pause', type: 'default' }],
    });
    const runs = await eventually(
      async () => {
        const r = await ok(resend.automations.runs.list({ automationId: flow.body.id }));
        expect(r.data).toHaveLength(1);
        return r;
      },
      { timeoutMs: 20_000, message: 'the event enrolled the contact' },
    );
    expect(runs.data[0]).toMatchObject({ status: 'running', completed_at: null });
    expect(
      (await ok(resend.automations.runs.list({ automationId: flow.body.id, status: 'completed' }))).data,
    ).toEqual([]);
    const run = await ok(resend.automations.runs.get({ automationId: flow.body.id, runId: runs.data[0].id }));
    expect(run).toMatchObject({ object: 'automation_run', id: runs.data[0].id, status: 'running' });

    expect(await ok(resend.automations.stop(flow.body.id))).toEqual({
      object: 'automation',
      id: flow.body.id,
      status: 'disabled',
    });
    const v1 = await server.call('GET', `/v1/flows/${flow.body.id}`, { key: account.project_key.key });
    expect(v1.body.status).toBe('paused');
    expect(await ok(resend.automations.remove(flow.body.id))).toEqual({
      object: 'automation',
      id: flow.body.id,
      deleted: true,
    });
    expect((await resend.automations.get(flow.body.id)).error).toMatchObject({ statusCode: 404 });
  }, 40_000);

  it('creates, changes and duplicates automations as flows', async () => {
    const segment = await ok(resend.segments.create({ name: 'Welcomed' }));
    const created = await ok(
      resend.automations.create({
        name: 'Plan-based',
        steps: [
          { key: 'start', type: 'trigger', config: { eventName: 'upgraded' } },
          { key: 'wait', type: 'delay', config: { duration: '1 day' } },
          {
            key: 'check',
            type: 'condition',
            config: { type: 'rule', field: 'contact.plan', operator: 'eq', value: 'pro' },
          },
          { key: 'tag', type: 'contact_update', config: { properties: { welcomed: true } } },
          { key: 'join', type: 'add_to_segment', config: { segmentId: segment.id } },
        ],
        connections: [
          { from: 'start', to: 'wait' },
          { from: 'wait', to: 'check' },
          { from: 'check', to: 'tag', type: 'condition_met' },
          { from: 'check', to: 'join', type: 'condition_not_met' },
        ],
      }),
    );
    expect(created).toMatchObject({ object: 'automation', id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    // the same flow /v1 shows
    const v1 = await server.call('GET', `/v1/flows/${created.id}`, { key: account.project_key.key });
    expect(v1.body).toMatchObject({
      name: 'Plan-based',
      status: 'draft',
      trigger: { type: 'event', event: 'upgraded' },
      steps: [
        { id: 'wait', type: 'wait', duration_seconds: 86_400, next: 'check' },
        {
          id: 'check',
          type: 'branch',
          branches: [
            { condition: { all: [{ field: 'properties.plan', op: 'equals', value: 'pro' }] }, next: 'tag' },
          ],
          default_next: 'join',
        },
        { id: 'tag', type: 'update_contact', set_properties: { welcomed: true }, next: null },
        { id: 'join', type: 'update_contact', join_list_id: segment.id, next: null },
      ],
    });
    const shown = await ok(resend.automations.get(created.id));
    expect(shown).toMatchObject({ status: 'disabled', name: 'Plan-based' });
    expect(shown.connections).toEqual([
      // Posthorn keeps no key for a flow's trigger: it is the step `trigger`
      { from: 'trigger', to: 'wait', type: 'default' },
      { from: 'wait', to: 'check', type: 'default' },
      { from: 'check', to: 'tag', type: 'condition_met' },
      { from: 'check', to: 'join', type: 'condition_not_met' },
    ]);
    expect(shown.steps.map((st) => st.type)).toEqual([
      'trigger',
      'delay',
      'condition',
      'contact_update',
      'add_to_segment',
    ]);

    expect(
      await ok(resend.automations.update(created.id, { name: 'Plan-based welcome', status: 'enabled' })),
    ).toEqual({
      object: 'automation',
      id: created.id,
    });
    const enabled = await server.call('GET', `/v1/flows/${created.id}`, { key: account.project_key.key });
    expect(enabled.body).toMatchObject({ name: 'Plan-based welcome', status: 'active' });

    const copy = await ok(resend.automations.duplicate(created.id));
    const copied = await ok(resend.automations.get(copy.id));
    expect(copied).toMatchObject({ name: 'Plan-based welcome (copy)', status: 'disabled' });
    expect(copied.steps).toEqual((await ok(resend.automations.get(created.id))).steps);

    // what a flow cannot do is Resend's validation error, naming the step, and nothing is written
    const before = (await ok(resend.automations.list())).data.length;
    const refused = await resend.automations.create({
      name: 'Deleting',
      steps: [
        { key: 'start', type: 'trigger', config: { eventName: 'left' } },
        { key: 'drop', type: 'contact_delete', config: {} },
      ],
      connections: [{ from: 'start', to: 'drop' }],
    });
    expect(refused.error).toMatchObject({ statusCode: 400, name: 'validation_error' });
    expect(refused.error?.message).toContain('steps[1]');
    expect((await ok(resend.automations.list())).data).toHaveLength(before);
  });
});

describe('logs', () => {
  it("lists the project's requests and reads one", async () => {
    await ok(resend.domains.list());
    const logs = await eventually(async () => {
      // each look is logged too: the page is large enough to reach back to it
      const l = await ok(resend.logs.list({ limit: 100 }));
      expect(l.data.some((e) => e.endpoint === '/resend/domains')).toBe(true);
      return l;
    });
    const entry = logs.data.find((e) => e.endpoint === '/resend/domains');
    expect(entry).toMatchObject({
      method: 'GET',
      response_status: 200,
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    const one = await ok(resend.logs.get(entry?.id as string));
    expect(one).toMatchObject({
      object: 'log',
      id: entry?.id,
      endpoint: '/resend/domains',
      request_body: null,
    });
    const next = await ok(resend.logs.list({ limit: 1, after: logs.data[0].id }));
    expect(next.data[0].id).not.toBe(logs.data[0].id);
  });
});

describe('received emails', () => {
  it('lists, reads and downloads received mail and its attachments, and forwards it', async () => {
    const me = await server.call('GET', '/v1/me', { key: account.project_key.key });
    const to = `hello@${me.body.inbound.domain}`;
    const boundary = `b-${randomBytes(6).toString('hex')}`;
    const raw = [
      'From: Sender <alice@sender.example>',
      `To: ${to}`,
      'Subject: Your report',
      'Message-ID: <report-1@sender.example>',
      `Content-Type: multipart/mixed; boundary="${boundary}"`,
      '',
      `--${boundary}`,
      'Content-Type: text/plain; charset=utf-8',
      '',
      'See the attachment',
      `--${boundary}`,
      'Content-Type: text/csv; name="report.csv"',
      'Content-Disposition: attachment; filename="report.csv"',
      '',
      'a,b',
      `--${boundary}--`,
      '',
    ].join('\r\n');
    const delivered = await deliverToMx(server, { from: 'alice@sender.example', to: [to] }, raw);
    expect(delivered.ok, delivered.response).toBe(true);

    const list = await eventually(async () => {
      const l = await ok(resend.emails.receiving.list());
      expect(l.data).toHaveLength(1);
      return l;
    });
    const id = list.data[0].id;
    expect(list.data[0]).toMatchObject({
      subject: 'Your report',
      received_for: [to],
      attachments: [{ filename: 'report.csv' }],
    });
    const email = await ok(resend.emails.receiving.get(id));
    expect(email).toMatchObject({
      object: 'email',
      id,
      from: 'Sender <alice@sender.example>',
      text: 'See the attachment',
    });
    expect(email.headers?.subject).toBe('Your report');
    // the raw link needs no key, as Resend's
    const source = await fetch(email.raw?.download_url as string);
    expect(source.status).toBe(200);
    expect(await source.text()).toContain('Subject: Your report');
    const tampered = await fetch(`${email.raw?.download_url}x`);
    expect(tampered.status).toBe(404);

    const attachments = await ok(resend.emails.receiving.attachments.list({ emailId: id }));
    expect(attachments.data).toMatchObject([
      { filename: 'report.csv', content_type: 'text/csv', content_disposition: 'attachment', size: 3 },
    ]);
    const attachment = await ok(
      resend.emails.receiving.attachments.get({ emailId: id, id: attachments.data[0].id }),
    );
    expect(attachment).toMatchObject({ object: 'attachment', id: attachments.data[0].id });
    expect(await (await fetch(attachment.download_url)).text()).toBe('a,b');

    // forward (the SDK reads the message and its raw link, then sends): /emails is answered
    await insertDomain('forward.example');
    const forwarded = await ok(
      resend.emails.receiving.forward({
        emailId: id,
        to: 'bo@recipient.example',
        from: 'me@forward.example',
      }),
    );
    expect(forwarded.id).toMatch(/^[0-9a-f-]{36}$/);
    // /emails/{id} still reads sent mail
    expect((await ok(resend.emails.get(forwarded.id))).subject).toBe('Your report');
    // the forwarded message's attachment, as sent, with a link that needs no key
    const sentFiles = await ok(resend.emails.attachments.list({ emailId: forwarded.id }));
    expect(sentFiles.data).toMatchObject([{ filename: 'report.csv', content_disposition: 'attachment' }]);
    const sentFile = await ok(
      resend.emails.attachments.get({ emailId: forwarded.id, id: sentFiles.data[0].id }),
    );
    expect(sentFile).toMatchObject({
      object: 'attachment',
      id: sentFiles.data[0].id,
      filename: 'report.csv',
    });
    const bytes = await (await fetch(sentFile.download_url)).text();
    expect(bytes.trim()).toBe('a,b');
    expect(Buffer.byteLength(bytes)).toBe(sentFile.size);
    const none = await resend.emails.attachments.get({ emailId: forwarded.id, id: id });
    expect(none.error).toMatchObject({ statusCode: 404, name: 'not_found' });
  }, 40_000);
});

async function insertDomain(name: string) {
  const { insertVerifiedDomain } = await import('../helpers/emails.ts');
  await insertVerifiedDomain(server, account.project.id, name);
}

describe('webhooks: rotation and events', () => {
  it('rotates the signing secret, lists events and their attempts, and replays one', async () => {
    const hook = await ok(resend.webhooks.create({ endpoint: receiver.url, events: ['contact.created'] }));
    const rotated = await ok(resend.webhooks.rotateSigningSecret(hook.id));
    expect(rotated).toMatchObject({ object: 'webhook', id: hook.id });
    expect(rotated.signing_secret).not.toBe(hook.signing_secret);
    expect((await ok(resend.webhooks.get(hook.id))).signing_secret).toBe(rotated.signing_secret);

    await ok(resend.contacts.create({ email: 'hooked@example.com' }));
    const events = await eventually(
      async () => {
        const l = await ok(resend.webhooks.events.list({ webhookId: hook.id }));
        expect(l.data).toMatchObject([{ type: 'contact.created', status: 'success' }]);
        return l;
      },
      { timeoutMs: 20_000, message: 'the contact.created delivery' },
    );
    const eventId = events.data[0].id;
    const event = await ok(resend.webhooks.events.get({ webhookId: hook.id, eventId }));
    expect(event).toMatchObject({
      object: 'webhook_event',
      id: eventId,
      type: 'contact.created',
      status: 'success',
      next_attempt_at: null,
      payload: { type: 'contact.created' },
    });
    const attempts = await ok(resend.webhooks.events.attempts.list({ webhookId: hook.id, eventId }));
    expect(attempts.data).toMatchObject([{ http_status_code: 200 }]);

    const before = receiver.hooks.length;
    expect(await ok(resend.webhooks.events.replay({ webhookId: hook.id, eventId }))).toEqual({
      object: 'webhook_event',
      id: eventId,
    });
    await eventually(() => expect(receiver.hooks.length).toBe(before + 1), { timeoutMs: 20_000 });
    // the replay is the same event (the same webhook-id), with a second attempt
    expect(receiver.hooks.at(-1)?.headers['svix-id']).toBe(receiver.hooks.at(-2)?.headers['svix-id']);
    await eventually(async () => {
      const again = await ok(resend.webhooks.events.attempts.list({ webhookId: hook.id, eventId }));
      expect(again.data).toHaveLength(2);
    });
    expect((await ok(resend.webhooks.events.list({ webhookId: hook.id }))).data).toHaveLength(1);
    const missing = await resend.webhooks.events.get({ webhookId: hook.id, eventId: hook.id });
    expect(missing.error).toMatchObject({ statusCode: 404, name: 'not_found' });
  }, 40_000);
});
