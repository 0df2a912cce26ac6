import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { addUsageToday, countEmails, expectError, FROM, waitForStatus } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

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

const send = (body: unknown, headers?: Record<string, string>) =>
  server.call('POST', '/v1/emails', { key, body, headers });

/** Usage already counted today for a project, as earlier sends would have left it. */
const addUsage = (projectId: string, counts: { sent: number; shared_domain_sent?: number }) =>
  addUsageToday(server, projectId, counts);

describe('POST /v1/emails delivers every field as sent', () => {
  it('arrives in the SMTP sink with addresses, bodies, headers, attachments, inline image and Posthorn headers', async () => {
    const pdf = randomBytes(50_000);
    const png = randomBytes(2_000);
    const res = await send({
      from: 'Zoë Sender <onboarding@posthorn.localhost>',
      to: ['Ann <ann@example.org>', 'bob@example.org'],
      cc: 'carol@example.org',
      bcc: ['dave@example.org'],
      reply_to: 'replies@example.org',
      subject: 'Grüße — your invoice',
      html: '<p>Hello <img src="cid:logo@posthorn"></p>',
      text: 'Hello in plain text',
      headers: { 'X-Campaign-Ref': 'spring-42' },
      attachments: [
        { filename: 'invoice.pdf', content: pdf.toString('base64'), content_type: 'application/pdf' },
        { content_id: 'logo@posthorn', content: png.toString('base64'), content_type: 'image/png' },
      ],
      tags: [{ name: 'category', value: 'invoice' }],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: expect.any(String), object: 'email', status: 'queued' });
    const email = await waitForStatus(server, key, res.body.id, 'sent');
    const message = await server.sink.waitFor((m) => m.parsed.messageId === email.message_id);
    const p = message.parsed;
    expect(p.from?.value[0]).toMatchObject({ name: 'Zoë Sender', address: 'onboarding@posthorn.localhost' });
    expect((p.to as any).value.map((v: { address: string }) => v.address)).toEqual([
      'ann@example.org',
      'bob@example.org',
    ]);
    expect((p.cc as any).value[0].address).toBe('carol@example.org');
    expect(p.bcc).toBeUndefined();
    expect(message.raw.toString('latin1')).not.toMatch(/^Bcc:/im);
    expect(message.to.sort()).toEqual([
      'ann@example.org',
      'bob@example.org',
      'carol@example.org',
      'dave@example.org',
    ]);
    expect((p.replyTo as any).value[0].address).toBe('replies@example.org');
    expect(p.subject).toBe('Grüße — your invoice');
    expect(p.text?.trim()).toBe('Hello in plain text');
    // mailparser resolves the cid reference to the inline part: the link between them holds
    expect(p.html).toContain('data:image/png;base64');
    expect(p.headers.get('x-campaign-ref')).toBe('spring-42');
    expect(p.headers.get('x-posthorn-project')).toBe(account.project.id);
    expect(p.headers.get('x-posthorn-stream')).toBe('transactional');
    expect(p.headers.get('feedback-id')).toContain(account.project.id);
    const invoice = p.attachments.find((a) => a.filename === 'invoice.pdf');
    expect(invoice?.contentType).toBe('application/pdf');
    expect(invoice?.content.equals(pdf)).toBe(true);
    const logo = p.attachments.find((a) => a.cid === 'logo@posthorn');
    expect(logo?.content.equals(png)).toBe(true);
    expect(email.tags).toEqual([{ name: 'category', value: 'invoice' }]);
    expect(email.events.map((e: { type: string }) => e.type)).toEqual([
      'queued',
      'sent',
      'sent',
      'sent',
      'sent',
    ]);
  });

  it('derives the text part from html when only html is given', async () => {
    const res = await send({
      from: FROM,
      to: 'text@example.org',
      subject: 'Derived',
      html: '<h1>Title</h1><p>See <a href="https://example.org/x">this</a></p>',
    });
    const email = await waitForStatus(server, key, res.body.id, 'sent');
    const message = await server.sink.waitFor((m) => m.parsed.messageId === email.message_id);
    expect(message.parsed.text).toContain('Title');
    expect(message.parsed.text).toContain('this (https://example.org/x)');
  });

  it('lists unknown fields in warnings and has no warnings key otherwise', async () => {
    const res = await send({
      from: FROM,
      to: 'w@example.org',
      subject: 'W',
      text: 'x',
      replyTo: 'a@example.org',
      colour: 'red',
    });
    expect(res.status).toBe(200);
    expect(res.body.warnings).toEqual(['replyTo', 'colour']);
  });
});

describe('refusals write nothing', () => {
  it.each([
    [{ to: 'a@example.org', subject: 'S', text: 'x' }, /`from` is required/],
    [{ from: FROM, subject: 'S', text: 'x' }, /`to` is required/],
    [{ from: FROM, to: 'a@example.org', text: 'x' }, /`subject` is required/],
    [{ from: FROM, to: 'a@example.org', subject: 'S' }, /html.*text/],
    [{ from: FROM, to: 'not-an-address', subject: 'S', text: 'x' }, /valid email address|one address/],
    [
      { from: FROM, to: Array.from({ length: 51 }, (_, i) => `r${i}@example.org`), subject: 'S', text: 'x' },
      /at most 50/,
    ],
    [
      { from: FROM, to: 'a@example.org', subject: 'S', text: 'x', tags: [{ name: 'bad tag', value: 'v' }] },
      /tags\[0\]/,
    ],
    [
      {
        from: FROM,
        to: 'a@example.org',
        subject: 'S',
        text: 'x',
        attachments: [{ filename: 'a', content: '@@@' }],
      },
      /base64/,
    ],
    [
      { from: FROM, to: 'a@example.org', subject: 'S', text: 'x', headers: { 'Message-ID': '<x@y>' } },
      /set by Posthorn/,
    ],
    [
      { from: FROM, to: 'a@example.org', subject: 'S', text: 'x', headers: { 'X-Posthorn-Project': 'p' } },
      /set by Posthorn/,
    ],
    [{ from: FROM, to: 'a@example.org', subject: 'S', text: 'x', scheduled_at: 'some day soon' }, /ISO 8601/],
    [
      {
        from: FROM,
        to: 'a@example.org',
        subject: 'S',
        text: 'x',
        scheduled_at: new Date(Date.now() + 31 * 86_400_000).toISOString(),
      },
      /30 days/,
    ],
    [
      { from: 'me@example.com', to: 'a@example.org', subject: 'S', text: 'x' },
      /example\.com.*not on a verified domain|not on a verified domain/,
    ],
  ])('%j → 400', async (body, message) => {
    const before = await countEmails(server);
    expectError(await send(body), 400, message);
    expect(await countEmails(server)).toBe(before);
  });

  it('refuses an unconfirmed account with 400 naming the confirmation', async () => {
    const fresh = await server.signup();
    const before = await countEmails(server);
    expectError(
      await server.call('POST', '/v1/emails', {
        key: fresh.project_key.key,
        body: { from: FROM, to: 'a@example.org', subject: 'S', text: 'x' },
      }),
      400,
      /not confirmed/,
    );
    expect(await countEmails(server)).toBe(before);
  });

  it('refuses past the monthly allowance with 402 and past the shared-domain daily cap with 429', async () => {
    const other = await server.signupConfirmed();
    const body = { from: FROM, to: 'a@example.org', subject: 'S', text: 'x' };
    await addUsage(other.project.id, { sent: 3000 });
    const before = await countEmails(server);
    const monthly = await server.call('POST', '/v1/emails', { key: other.project_key.key, body });
    expect(monthly.status).toBe(402);
    expect(monthly.body).toEqual({
      error: expect.stringMatching(/3000 messages a month/),
      code: 'plan_upgrade_required',
      feature: 'sending_overage',
      upgrade_to: 'starter',
    });

    await setWorkspacePlan(server.runtime.ctx, other.workspace.id, 'starter');
    await server.runtime.ctx.db
      .updateTable('sending_usage')
      .set({ shared_domain_sent: 500 })
      .where('project_id', '=', other.project.id)
      .execute();
    const daily = await server.call('POST', '/v1/emails', { key: other.project_key.key, body });
    expectError(daily, 429, /shared domain allows 500/);
    expect(Number(daily.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await countEmails(server)).toBe(before);
  });
});

describe('reserved headers', () => {
  const withHeader = (name: string, i = 0) => ({
    from: FROM,
    to: `reserved${i}@example.org`,
    subject: 'S',
    text: 'x',
    headers: { 'X-Fine': 'yes', [name]: 'v@example.org' },
  });

  it.each([
    'Resent-From',
    'resent-to',
    'RESENT-MESSAGE-ID',
    'Resent-Date',
    'Resent-Sender',
    'Delivered-To',
    'delivered-to',
    'Envelope-To',
    'X-Envelope-To',
    'X-Original-To',
    'Errors-To',
    'Disposition-Notification-To',
    'Return-Receipt-To',
    'List-Unsubscribe',
    'list-unsubscribe-post',
    'LIST-UNSUBSCRIBE-POST',
  ])('refuses %s with 400 naming it and writes nothing', async (name) => {
    const before = await countEmails(server);
    expectError(await send(withHeader(name)), 400, new RegExp(`\\b${name}\\b.*reserved`));
    const batch = await server.call('POST', '/v1/emails/batch', {
      key,
      body: [withHeader('X-Other', 0), withHeader(name, 1)],
    });
    expectError(batch, 400, new RegExp(`^Message 1: .*\\b${name}\\b.*reserved`));
    expect(await countEmails(server)).toBe(before);
  });

  it('still accepts headers that only resemble reserved ones', async () => {
    const res = await send({
      ...withHeader('X-Resent-Note'),
      headers: { 'X-Resent-Note': 'a', 'X-List-Unsubscribe-Reason': 'b', 'X-Delivered-To-Team': 'c' },
    });
    expect(res.status).toBe(200);
  });
});

describe('header injection', () => {
  it('refuses line breaks in the subject, the from name and header values', async () => {
    expectError(
      await send({ from: FROM, to: 'a@example.org', subject: 'Hi\r\nBcc: evil@example.com', text: 'x' }),
      400,
      /line breaks/,
    );
    expectError(
      await send({
        from: 'Evil\r\nBcc: evil@example.com <onboarding@posthorn.localhost>',
        to: 'a@example.org',
        subject: 'S',
        text: 'x',
      }),
      400,
      /line breaks/,
    );
    expectError(
      await send({
        from: FROM,
        to: 'a@example.org',
        subject: 'S',
        text: 'x',
        headers: { 'X-A': 'v\r\nBcc: evil@example.com' },
      }),
      400,
      /line breaks/,
    );
  });

  it('never lets an attachment filename add a header', async () => {
    const res = await send({
      from: FROM,
      to: 'inject@example.org',
      subject: 'Filename',
      text: 'x',
      attachments: [
        {
          filename: 'a.txt\r\nBcc: evil@example.com\r\nX-Evil: 1',
          content: Buffer.from('hi').toString('base64'),
        },
      ],
    });
    expect(res.status).toBe(200);
    const email = await waitForStatus(server, key, res.body.id, 'sent');
    const message = await server.sink.waitFor((m) => m.parsed.messageId === email.message_id);
    expect(message.to).toEqual(['inject@example.org']);
    expect(message.raw.toString('latin1')).not.toMatch(/^(Bcc|X-Evil):/im);
    expect(message.parsed.headers.has('x-evil')).toBe(false);
  });
});

describe('idempotency, batch, schedule, suppression, reading', () => {
  it('replays the first response for the same key and body, 409 for another body', async () => {
    const body = { from: FROM, to: 'idem@example.org', subject: 'Once', text: 'x' };
    const headers = { 'Idempotency-Key': `order-${Date.now()}` };
    const first = await send(body, headers);
    const before = await countEmails(server);
    const again = await send(body, headers);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(await countEmails(server)).toBe(before);
    expectError(await send({ ...body, subject: 'Twice' }, headers), 409, /Idempotency-Key/);
  });

  it('replays a retry of the send that used the last of the monthly allowance; a new key gets 402', async () => {
    const other = await server.signupConfirmed();
    await addUsage(other.project.id, { sent: 2999 });
    const body = { from: FROM, to: 'last-of-month@example.org', subject: 'Last', text: 'x' };
    const idem = { 'Idempotency-Key': 'last-of-month' };
    const call = (headers: Record<string, string>) =>
      server.call('POST', '/v1/emails', { key: other.project_key.key, body, headers });
    const first = await call(idem);
    expect(first.status).toBe(200);
    const before = await countEmails(server);
    const again = await call(idem);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    const fresh = await call({ 'Idempotency-Key': 'next-of-month' });
    expect(fresh.status).toBe(402);
    expect(fresh.body).toMatchObject({
      error: expect.stringMatching(/3000 messages a month/),
      feature: 'sending_overage',
    });
    expect((await call({})).status).toBe(402);
    expect(await countEmails(server)).toBe(before);
  });

  it('replays a retry of the send that used the last of the shared-domain daily cap; a new key gets 429', async () => {
    const other = await server.signupConfirmed();
    await setWorkspacePlan(server.runtime.ctx, other.workspace.id, 'starter');
    await addUsage(other.project.id, { sent: 499, shared_domain_sent: 499 });
    const body = { from: FROM, to: 'last-of-day@example.org', subject: 'Last', text: 'x' };
    const idem = { 'Idempotency-Key': 'last-of-day' };
    const call = (headers: Record<string, string>) =>
      server.call('POST', '/v1/emails', { key: other.project_key.key, body, headers });
    const first = await call(idem);
    expect(first.status).toBe(200);
    const before = await countEmails(server);
    const again = await call(idem);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expectError(await call({ 'Idempotency-Key': 'next-of-day' }), 429, /shared domain allows 500/);
    // the same key with another body is still a conflict, not a limit refusal
    expectError(
      await server.call('POST', '/v1/emails', {
        key: other.project_key.key,
        body: { ...body, subject: 'Other' },
        headers: idem,
      }),
      409,
      /Idempotency-Key/,
    );
    expect(await countEmails(server)).toBe(before);
  });

  it('sends once for identical concurrent requests with one key, answering each the same', async () => {
    const to = `concurrent-${Date.now()}@example.org`;
    const body = { from: FROM, to, subject: 'Once', text: 'x' };
    const headers = { 'Idempotency-Key': `concurrent-${Date.now()}` };
    const answers = await Promise.all(Array.from({ length: 5 }, () => send(body, headers)));
    for (const a of answers) {
      expect(a.status).toBe(200);
      expect(a.body).toEqual(answers[0].body);
    }
    const rows = await server.runtime.ctx.db
      .selectFrom('emails')
      .select('id')
      .where(sql<boolean>`${to} = any(to_addresses)`)
      .execute();
    expect(rows.map((r) => r.id)).toEqual([answers[0].body.id]);
  });

  it('ignores a key older than 24 hours', async () => {
    const body = { from: FROM, to: 'expired-key@example.org', subject: 'Old', text: 'x' };
    const headers = { 'Idempotency-Key': `expired-${Date.now()}` };
    const first = await send(body, headers);
    expect(first.status).toBe(200);
    await server.runtime.ctx.db
      .updateTable('idempotency_keys')
      .set({ created_at: new Date(Date.now() - 25 * 3_600_000) })
      .where('key', '=', headers['Idempotency-Key'])
      .execute();
    const other = await send({ ...body, subject: 'New' }, headers);
    expect(other.status).toBe(200);
    expect(other.body.id).not.toBe(first.body.id);
  });

  it('accepts a batch, or refuses it whole naming the first bad message', async () => {
    const ok = await server.call('POST', '/v1/emails/batch', {
      key,
      body: [0, 1, 2].map((i) => ({ from: FROM, to: `batch${i}@example.org`, subject: `B${i}`, text: 'x' })),
    });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toHaveLength(3);
    for (const d of ok.body.data) await waitForStatus(server, key, d.id, 'sent');

    const before = await countEmails(server);
    const bad = await server.call('POST', '/v1/emails/batch', {
      key,
      body: [
        { from: FROM, to: 'x0@example.org', subject: 'S', text: 'x' },
        { from: FROM, to: 'x1@example.org', subject: 'S', text: 'x' },
        { from: FROM, to: 'broken', subject: 'S', text: 'x' },
      ],
    });
    expectError(bad, 400, /Message 2/);
    expect(await countEmails(server)).toBe(before);
    expectError(
      await server.call('POST', '/v1/emails/batch', {
        key,
        body: Array.from({ length: 101 }, () => ({
          from: FROM,
          to: 'a@example.org',
          subject: 'S',
          text: 'x',
        })),
      }),
      400,
    );
  });

  it('holds a scheduled email, cancels it, and refuses to cancel a sent one', async () => {
    const scheduled = await send({
      from: FROM,
      to: 'later@example.org',
      subject: 'Later',
      text: 'x',
      scheduled_at: new Date(Date.now() + 3_600_000).toISOString(),
    });
    expect(scheduled.body.status).toBe('scheduled');
    const cancelled = await server.call('POST', `/v1/emails/${scheduled.body.id}/cancel`, { key });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    const sent = await send({ from: FROM, to: 'now@example.org', subject: 'Now', text: 'x' });
    await waitForStatus(server, key, sent.body.id, 'sent');
    expectError(
      await server.call('POST', `/v1/emails/${sent.body.id}/cancel`, { key }),
      409,
      /Only scheduled/,
    );
    expect(server.sink.messages.some((m) => m.to.includes('later@example.org'))).toBe(false);
  });

  it('stores a send to a suppressed address as suppressed and sends nothing', async () => {
    const add = await server.call('POST', '/v1/suppressions', {
      key,
      body: { email: 'Blocked@Example.org' },
    });
    expect(add.status).toBe(200);
    const res = await send({ from: FROM, to: 'blocked@example.org', subject: 'No', text: 'x' });
    expect(res.body.status).toBe('suppressed');
    const list = await server.call('GET', '/v1/suppressions', { key });
    expect(list.body.data.map((s: { email: string }) => s.email)).toContain('blocked@example.org');
    expect((await server.call('DELETE', '/v1/suppressions/blocked@example.org', { key })).status).toBe(204);
    const again = await send({ from: FROM, to: 'blocked@example.org', subject: 'Yes', text: 'x' });
    expect(again.body.status).toBe('queued');
    expect(
      server.sink.messages.filter((m) => m.to.includes('blocked@example.org')).map((m) => m.parsed.subject),
    ).not.toContain('No');
  });

  it('lists with filters and hides other projects', async () => {
    const tagged = await send({
      from: FROM,
      to: 'filter@example.org',
      subject: 'F',
      text: 'x',
      tags: [{ name: 'kind', value: 'receipt' }],
    });
    await waitForStatus(server, key, tagged.body.id, 'sent');
    const byTag = await server.call('GET', '/v1/emails?tag=kind:receipt', { key });
    expect(byTag.body.data.map((e: { id: string }) => e.id)).toEqual([tagged.body.id]);
    const byTo = await server.call('GET', '/v1/emails?to=filter@example.org&status=sent', { key });
    expect(byTo.body.total).toBe(1);
    // any recipient (To with a display name, Cc, Bcc), in any case; a name or part of an address is no match
    const named = await send({
      from: FROM,
      to: ['Fay Filter <Fay.Filter@Example.org>'],
      cc: ['cc-filter@example.org'],
      bcc: ['bcc-filter@example.org'],
      subject: 'G',
      text: 'x',
    });
    expect(named.status, JSON.stringify(named.body)).toBe(200);
    const idsFor = async (to: string) =>
      (await server.call('GET', `/v1/emails?to=${encodeURIComponent(to)}`, { key })).body.data.map(
        (e: { id: string }) => e.id,
      );
    for (const to of [
      'fay.filter@example.org',
      'FAY.FILTER@example.org',
      'cc-filter@example.org',
      'bcc-filter@example.org',
    ])
      expect(await idsFor(to), to).toEqual([named.body.id]);
    for (const to of ['Fay Filter', 'filter@example', 'example.org'])
      expect(await idsFor(to), to).toEqual([]);
    const other = await server.signup();
    expectError(
      await server.call('GET', `/v1/emails/${tagged.body.id}`, { key: other.project_key.key }),
      404,
    );
    expectError(await server.call('GET', '/v1/emails/not-a-uuid', { key }), 404);
  });
});
