import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { expectError, FROM, insertVerifiedDomain, waitForStatus } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let account: SignupResult;
let other: SignupResult;
let key: string;

beforeAll(async () => {
  server = await startTestServer();
  [account, other] = [await server.signupConfirmed(), await server.signupConfirmed()];
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
}, 60_000);
afterAll(() => server?.close());

const SIM = 'simulator.posthorn.test';
const stats = (query: string, k = key) => server.call('GET', `/v1/emails/stats${query}`, { key: k });

/** The UTC date `daysAgo` days before today, as YYYY-MM-DD. */
function utcDay(daysAgo: number): string {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - daysAgo))
    .toISOString()
    .slice(0, 10);
}

async function send(body: Record<string, unknown>, k = key): Promise<string> {
  const res = await server.call('POST', '/v1/emails', { key: k, body: { from: FROM, ...body } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id;
}

/** The message source without the headers that differ by the moment of composing: DKIM-Signature and Date. */
function timeless(raw: Buffer | string): string {
  const text = typeof raw === 'string' ? raw : raw.toString('utf8');
  const end = text.indexOf('\r\n\r\n');
  const headers = text
    .slice(0, end)
    .split(/\r\n(?![ \t])/)
    .filter((h) => !/^(dkim-signature|date):/i.test(h));
  return `${headers.join('\r\n')}${text.slice(end)}`;
}

describe('GET /v1/emails/stats', () => {
  let bouncedId: string;

  it('counts each recipient outcome of today: sent includes the bounces, rates against the thresholds', async () => {
    // one message to three simulated recipients (delivered; bounced; delivered then a complaint)
    // and one to the sink through the relay (sent: accepted by the next hop, not the last)
    bouncedId = await send({
      to: [`delivered@${SIM}`, `bounced@${SIM}`, `complained@${SIM}`],
      subject: 'Three outcomes',
      text: 'Hello',
    });
    const relayed = await send({ to: 'reader@example.org', subject: 'Relayed', text: 'Hello' });
    await waitForStatus(server, key, bouncedId, 'bounced');
    await waitForStatus(server, key, relayed, 'sent');

    const res = await stats('?days=1');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    // only today: earlier days are read (and kept) by the next test, after it writes their events
    expect(res.body).toEqual({
      object: 'email_stats',
      days: 1,
      from: utcDay(0),
      to: utcDay(0),
      data: [{ date: utcDay(0), sent: 4, delivered: 2, bounced: 1, complained: 1 }],
      totals: { sent: 4, delivered: 2, bounced: 1, complained: 1 },
      // four messages are too few to judge (fewer than 100): the value is given, not a level
      bounce_rate: {
        value: 0.25,
        warning_at: 0.02,
        critical_at: 0.05,
        messages: 4,
        min_messages: 100,
        level: 'too_few',
      },
      // complaints of the mail that reached a mailbox: 1 of 4 - 1
      complaint_rate: {
        value: 1 / 3,
        warning_at: 0.001,
        critical_at: 0.003,
        messages: 3,
        min_messages: 100,
        level: 'too_few',
      },
    });
  });

  it('judges a rate from 100 messages: below, its level is too_few; from there, against the thresholds', async () => {
    const judged = await server.signupConfirmed();
    const k = judged.project_key.key;
    await setWorkspacePlan(server.runtime.ctx, judged.workspace.id, 'unlimited');
    // one message through the relay (one `sent` event), then 95 delivered and 3 bounced as delivery writes them
    const id = await send({ to: 'reader@example.org', subject: 'Judged', text: 'Hello' }, k);
    await waitForStatus(server, k, id, 'sent');
    const events = (type: string, n: number) =>
      Array.from({ length: n }, () => ({
        email_id: id,
        project_id: judged.project.id,
        type,
        recipient: 'reader@example.org',
        detail: JSON.stringify(type === 'bounced' ? { bounce_type: 'hard' } : {}),
      }));
    await server.runtime.ctx.db
      .insertInto('email_events')
      .values([...events('delivered', 95), ...events('bounced', 3)])
      .execute();
    const below = await stats('?days=1', k);
    expect(below.status, JSON.stringify(below.body)).toBe(200);
    expect(below.body.totals).toMatchObject({ sent: 99, bounced: 3 });
    expect(below.body.bounce_rate).toEqual({
      value: 3 / 99,
      warning_at: 0.02,
      critical_at: 0.05,
      messages: 99,
      min_messages: 100,
      level: 'too_few',
    });
    expect(below.body.complaint_rate).toMatchObject({ value: 0, messages: 96, level: 'too_few' });

    // the hundredth message: 3% is judged (warning from 2%); complaints are still over 97 messages
    await server.runtime.ctx.db.insertInto('email_events').values(events('delivered', 1)).execute();
    const at = await stats('?days=1', k);
    expect(at.body.bounce_rate).toEqual({
      value: 0.03,
      warning_at: 0.02,
      critical_at: 0.05,
      messages: 100,
      min_messages: 100,
      level: 'warning',
    });
    expect(at.body.complaint_rate).toMatchObject({ messages: 97, level: 'too_few' });
    await server.runtime.ctx.db.insertInto('email_events').values(events('delivered', 3)).execute();
    const after = await stats('?days=1', k);
    expect(after.body.complaint_rate).toMatchObject({ value: 0, messages: 100, level: 'good' });
  });

  it("counts only the project's own mail: another project sees zeros and no rate", async () => {
    const res = await stats('?days=7', other.project_key.key);
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(7);
    expect(res.body.totals).toEqual({ sent: 0, delivered: 0, bounced: 0, complained: 0 });
    expect(res.body.bounce_rate).toEqual({
      value: null,
      warning_at: 0.02,
      critical_at: 0.05,
      messages: 0,
      min_messages: 100,
      level: null,
    });
    expect(res.body.complaint_rate.value).toBeNull();
    expect(res.body.complaint_rate.level).toBeNull();
  });

  it('puts earlier events on their UTC day, counts a bounce reported by DSN once, and keeps finished days', async () => {
    // the timeline of a message relayed three days ago (noon UTC) and bounced later by a DSN,
    // written as delivery and the report door write it; opens and queued events are not outcomes
    const noon = new Date(`${utcDay(3)}T12:00:00Z`);
    const event = (type: string, detail: Record<string, unknown> = {}, at = noon) => ({
      email_id: bouncedId,
      project_id: account.project.id,
      type,
      recipient: 'ann@example.org',
      detail: JSON.stringify(detail),
      created_at: at,
    });
    await server.runtime.ctx.db
      .insertInto('email_events')
      .values([
        event('queued'),
        event('sent', { response: '250 ok' }),
        event('sent', { response: '250 ok' }),
        event('bounced', { source: 'dsn', bounce_type: 'hard' }, new Date(noon.getTime() + 3_600_000)),
        event('opened', { user_agent_class: 'human' }),
        event('delivered', {}, new Date(`${utcDay(5)}T23:59:59Z`)),
        event('complained', {}, new Date(`${utcDay(4)}T00:00:00Z`)),
      ])
      .execute();

    const res = await stats('?days=7');
    expect(res.status).toBe(200);
    const byDate = Object.fromEntries(res.body.data.map((d: { date: string }) => [d.date, d]));
    expect(byDate[utcDay(3)]).toEqual({ date: utcDay(3), sent: 2, delivered: 0, bounced: 1, complained: 0 });
    expect(byDate[utcDay(4)]).toMatchObject({ sent: 0, complained: 1 });
    expect(byDate[utcDay(5)]).toMatchObject({ sent: 1, delivered: 1 });
    expect(res.body.totals).toEqual({ sent: 7, delivered: 3, bounced: 2, complained: 2 });

    // finished days are kept (today never is) and read back the same
    const kept = await sql<{ day: string; sent: number }>`
      select to_char(day, 'YYYY-MM-DD') as day, sent from email_stats_days
       where project_id = ${account.project.id} order by day`.execute(server.runtime.ctx.db);
    expect(kept.rows).toContainEqual({ day: utcDay(3), sent: 2 });
    expect(kept.rows.map((r) => r.day)).not.toContain(utcDay(0));
    expect((await stats('?days=7')).body).toEqual(res.body);
    // a window of two days leaves the older days out
    expect((await stats('?days=2')).body.totals).toEqual({
      sent: 4,
      delivered: 2,
      bounced: 1,
      complained: 1,
    });
    // the default window is 30 days, today last, the days without mail as zeros
    const month = await stats('');
    expect(month.body).toMatchObject({ days: 30, from: utcDay(29), to: utcDay(0), totals: res.body.totals });
    expect(month.body.data).toHaveLength(30);
    expect(month.body.data[29]).toEqual({
      date: utcDay(0),
      sent: 4,
      delivered: 2,
      bounced: 1,
      complained: 1,
    });
    expect(month.body.data[0]).toEqual({
      date: utcDay(29),
      sent: 0,
      delivered: 0,
      bounced: 0,
      complained: 0,
    });
  });

  it('refuses a window outside 1 to 90 days with a 400 naming `days`', async () => {
    for (const q of ['?days=0', '?days=91', '?days=-1', '?days=1.5', '?days=thirty'])
      expectError(await stats(q), 400, /`days`/);
    expectError(await server.call('GET', '/v1/emails/stats'), 401);
    expect((await stats('?days=90')).body.data).toHaveLength(90);
  });
});

describe('GET /v1/emails/{id}/raw', () => {
  it('is the message exactly as it left, less the DKIM signature, as text/plain', async () => {
    const id = await send({
      to: 'Ann <ann@example.org>',
      cc: 'carol@example.org',
      bcc: 'dave@example.org',
      subject: 'Grüße — the raw source',
      html: '<p>Hello <b>Ann</b></p>',
      text: 'Hello Ann',
      headers: { 'X-Order': 'A-1' },
    });
    const email = await waitForStatus(server, key, id, 'sent');
    const left = await server.sink.waitFor((m) => m.parsed.messageId === email.message_id);
    const res = await server.call('GET', `/v1/emails/${id}/raw`, { key });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(res.body).toMatch(new RegExp(`^Message-ID: ${email.message_id}\r$`, 'm'));
    expect(res.body).toMatch(/^Date: /m);
    expect(res.body).not.toMatch(/^DKIM-Signature:/im);
    expect(res.body).not.toContain('dave@example.org');
    expect(left.raw.toString('utf8')).toMatch(/^DKIM-Signature:/);
    expect(timeless(res.body)).toBe(timeless(left.raw));
  });

  it('carries the attachments', async () => {
    const pdf = randomBytes(3_000);
    const id = await send({
      to: 'ann@example.org',
      subject: 'With an attachment',
      text: 'See attached',
      attachments: [{ filename: 'a.pdf', content: pdf.toString('base64'), content_type: 'application/pdf' }],
    });
    const res = await server.call('GET', `/v1/emails/${id}/raw`, { key });
    expect(res.status).toBe(200);
    const parsed = await simpleParser(res.body);
    expect(parsed.attachments.map((a) => [a.filename, a.contentType])).toEqual([
      ['a.pdf', 'application/pdf'],
    ]);
    expect(parsed.attachments[0].content.equals(pdf)).toBe(true);
  });

  it('renders a template email again, as delivery does', async () => {
    const template = await server.call('POST', '/v1/templates', {
      key,
      body: {
        name: 'Raw',
        subject: 'Order {{ order }}',
        mjml: '<mjml><mj-body><mj-section><mj-column><mj-text>Order {{ order }} ships</mj-text></mj-column></mj-section></mj-body></mjml>',
        variables: [{ name: 'order', type: 'string' }],
      },
    });
    expect(template.status, JSON.stringify(template.body)).toBe(200);
    await server.call('POST', `/v1/templates/${template.body.id}/publish`, { key });
    const id = await send({
      to: 'ann@example.org',
      template: { id: template.body.id, variables: { order: 'B-7' } },
    });
    const email = await waitForStatus(server, key, id, 'sent');
    const left = await server.sink.waitFor((m) => m.parsed.messageId === email.message_id);
    const res = await server.call('GET', `/v1/emails/${id}/raw`, { key });
    expect(res.status).toBe(200);
    expect(res.body).toContain('Order B-7 ships');
    expect(timeless(res.body)).toBe(timeless(left.raw));
  });

  it('applies the marketing layer to marketing mail: footer, tracked links, List-Unsubscribe', async () => {
    const footer = await server.call('PATCH', '/v1/me/footer', {
      key,
      body: { address: 'Raw Tests Ltd, 2 High Street, Leeds LS1 1AA' },
    });
    expect(footer.status).toBe(200);
    await insertVerifiedDomain(server, account.project.id, 'letters.example');
    const list = (await server.call('POST', '/v1/lists', { key, body: { name: 'Raw' } })).body.id;
    const campaign = await server.call('POST', '/v1/campaigns', {
      key,
      body: {
        name: 'Raw',
        from: 'news@letters.example',
        subject: 'News',
        html: '<p>Hello</p><p><a href="https://shop.example.com/sale">Sale</a></p>',
        list_ids: [list],
      },
    });
    expect(campaign.status, JSON.stringify(campaign.body)).toBe(200);
    const test = await server.call('POST', `/v1/campaigns/${campaign.body.id}/test`, {
      key,
      body: { to: [account.account.email] },
    });
    expect(test.status, JSON.stringify(test.body)).toBe(200);
    const id = test.body.sent[0].email_id;
    const email = await waitForStatus(server, key, id, 'sent');
    const left = await server.sink.waitFor((m) => m.parsed.messageId === email.message_id);

    const res = await server.call('GET', `/v1/emails/${id}/raw`, { key });
    expect(res.status).toBe(200);
    expect(res.body).toMatch(/^List-Unsubscribe: /m);
    expect(res.body).toContain('2 High Street');
    expect(timeless(res.body)).toBe(timeless(left.raw));
  });

  it("is a 404 for another project's email or an id that is none, a 409 when it cannot be composed", async () => {
    const id = await send({ to: 'ann@example.org', subject: 'Mine', text: 'x' });
    await waitForStatus(server, key, id, 'sent');
    expectError(await server.call('GET', `/v1/emails/${id}/raw`, { key: other.project_key.key }), 404);
    expectError(await server.call('GET', '/v1/emails/not-an-id/raw', { key }), 404);
    expectError(await server.call('GET', `/v1/emails/${id}/raw`), 401);
    // marketing mail without a contact to unsubscribe is failed by delivery, never sent bare
    await server.runtime.ctx.db
      .updateTable('emails')
      .set({ stream: 'marketing', contact_id: null })
      .where('id', '=', id)
      .execute();
    expectError(await server.call('GET', `/v1/emails/${id}/raw`, { key }), 409, /needs a contact/);
    // past the retention period the body is gone: no source to compose, and none made up
    await server.runtime.ctx.db
      .updateTable('emails')
      .set({ html: null, text_body: null, body_pruned_at: new Date() })
      .where('id', '=', id)
      .execute();
    expectError(await server.call('GET', `/v1/emails/${id}/raw`, { key }), 409, /body was removed/);
  });
});
