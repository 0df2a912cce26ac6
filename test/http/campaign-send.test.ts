import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { sendCampaignBatch } from '../../src/domain/campaigns/send-batch.ts';
import { suppress } from '../../src/domain/emails/suppressions.ts';
import { expectError } from '../helpers/assertions.ts';
import {
  addUsageToday,
  campaignMessages,
  FROM,
  insertVerifiedDomain,
  sharedDkimResolver,
  unfoldedHeaders,
  waitForCampaignStatus,
  waitForStatus,
} from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import type { SinkMessage } from '../helpers/smtp-sink.ts';

const LINK = 'https://shop.example.com/spring?utm_source=news';
const ADDRESS = 'Posthorn Tests Ltd, 2 High Street, Leeds LS1 1AA';

let server: TestServer;
let account: SignupResult;
let key: string;
let list: string;
let readers: string[];

const campaign = (extra: Record<string, unknown> = {}) => ({
  name: 'Spring news',
  from: FROM,
  subject: 'Spring is here, {{ contact.first_name }}',
  html: `<html><body><p>Hello {{ contact.first_name }}</p><p><a href="${LINK}">See the sale</a></p></body></html>`,
  list_ids: [list],
  ...extra,
});

async function createCampaign(body: Record<string, unknown>, k = key): Promise<string> {
  const res = await server.call('POST', '/v1/campaigns', { key: k, body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id;
}

const send = (id: string, k = key) => server.call('POST', `/v1/campaigns/${id}/send`, { key: k });

const messagesOf = (campaignId: string) => campaignMessages(server.sink.messages, campaignId);

beforeAll(async () => {
  server = await startTestServer();
  account = await server.signupConfirmed();
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'starter');
  list = (await server.call('POST', '/v1/lists', { key, body: { name: 'News' } })).body.id;
  readers = ['ada', 'grace', 'edsger', 'barbara'].map((n) => `${n}@readers.example`);
  for (const email of readers) {
    const res = await server.call('POST', '/v1/contacts', {
      key,
      body: { email, first_name: email[0].toUpperCase() + email.slice(1, email.indexOf('@')) },
    });
    expect(res.status).toBe(200);
  }
  const added = await server.call('POST', `/v1/lists/${list}/contacts`, { key, body: { emails: readers } });
  expect(added.status, JSON.stringify(added.body)).toBe(200);
}, 60_000);
afterAll(() => server?.close());

describe('sending a campaign', () => {
  it('refuses while the footer holds the placeholder address, naming the fix', async () => {
    const id = await createCampaign(campaign());
    expectError(await send(id), 400, /PATCH \/v1\/me\/footer/);
    expect((await server.call('GET', `/v1/campaigns/${id}`, { key })).body.status).toBe('draft');
    await server.call('DELETE', `/v1/campaigns/${id}`, { key });
  });

  it('sends each audience address exactly one message with footer, tracking and signed one-click headers', async () => {
    const footer = await server.call('PATCH', '/v1/me/footer', { key, body: { address: ADDRESS } });
    expect(footer.status).toBe(200);
    const id = await createCampaign(campaign());
    const started = await send(id);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(started.body).toMatchObject({ status: 'sending', recipient_count: readers.length });
    expect(started.body.started_at).not.toBeNull();

    const done = await waitForCampaignStatus(server, key, id, 'sent');
    expect(done.finished_at).not.toBeNull();
    const messages = messagesOf(id);
    expect(messages.flatMap((m) => m.to).sort()).toEqual([...readers].sort());
    const { resolver } = await sharedDkimResolver(server);
    for (const message of messages) {
      const { parsed } = message;
      const name = message.to[0][0].toUpperCase() + message.to[0].slice(1, message.to[0].indexOf('@'));
      expect(parsed.subject).toBe(`Spring is here, ${name}`);
      expect(parsed.html).toContain(`Hello ${name}`);
      // footer in both parts
      expect(parsed.html).toContain('2 High Street, Leeds LS1 1AA');
      expect(parsed.text).toContain('2 High Street, Leeds LS1 1AA');
      expect(parsed.text).toMatch(/Unsubscribe\W+http:\/\/\S+\/u\/[\w-]+/);
      // the content link goes through click tracking; the open pixel is there
      expect(parsed.html).not.toContain(`href="${LINK}"`);
      expect(parsed.html).toMatch(/href="http:\/\/[^"]+\/t\/c\/[\w-]+"/);
      expect(parsed.html).toMatch(/<img src="http:\/\/[^"]+\/t\/o\/[\w-]+"/);
      expect(parsed.headers.get('x-posthorn-stream')).toBe('marketing');
      expect(String(parsed.headers.get('feedback-id'))).toBe(
        `marketing:${id}:${account.project.id}:posthorn`,
      );
      expect(unfoldedHeaders(message.raw)).toMatch(/^List-Unsubscribe: <http:\/\/[^>]+\/u\/[\w-]+>$/m);
      expect(unfoldedHeaders(message.raw)).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click$/m);
      const verified = await dkimVerify(message.raw, { resolver });
      expect(verified.results[0].status.result).toBe('pass');
      const signed = /\bh=([^;]+)/.exec(
        unfoldedHeaders(message.raw).match(/^DKIM-Signature:.*$/m)?.[0] ?? '',
      )?.[1];
      expect(String(signed).replace(/\s/g, '').toLowerCase().split(':')).toEqual(
        expect.arrayContaining(['list-unsubscribe', 'list-unsubscribe-post']),
      );
    }
    // a tracked link redirects to the original URL
    const tracked = /href="(http:\/\/[^"]+\/t\/c\/[\w-]+)"/.exec(messages[0].parsed.html as string)?.[1];
    const redirect = await fetch(`${server.url}${new URL(tracked as string).pathname}`, {
      redirect: 'manual',
    });
    expect(redirect.headers.get('location')).toBe(LINK);

    expectError(await send(id), 409);
  });

  it('leaves links and the pixel alone when tracking is off, and still adds the footer (and the preheader)', async () => {
    const id = await createCampaign(
      campaign({
        tracking: { opens: false, clicks: false },
        preheader: 'Ten days of spring prices, {{ contact.first_name }}',
      }),
    );
    expect((await send(id)).status).toBe(200);
    await waitForCampaignStatus(server, key, id, 'sent');
    const messages = messagesOf(id);
    expect(messages).toHaveLength(readers.length);
    for (const { parsed } of messages) {
      expect(parsed.html).toContain(`href="${LINK}"`);
      expect(parsed.html).not.toContain('/t/o/');
      expect(parsed.html).toContain('2 High Street, Leeds LS1 1AA');
      // the preheader, personalised, hidden right after <body>; the text part does not start with it
      expect(parsed.html).toMatch(
        /<body[^>]*><!--preheader--><div style="display:none[^"]*">Ten days of spring prices, [A-Z]\w+<\/div>/,
      );
      expect(String(parsed.text).trimStart().startsWith('Ten days')).toBe(false);
    }
  });

  it('a re-run of the send job after a crash writes no second email', async () => {
    const id = await createCampaign(campaign({ name: 'Again' }));
    expect((await send(id)).status).toBe(200);
    await waitForCampaignStatus(server, key, id, 'sent');
    const db = server.runtime.ctx.db;
    const count = async () =>
      Number(
        (
          await db
            .selectFrom('emails')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('campaign_id', '=', id)
            .executeTakeFirstOrThrow()
        ).n,
      );
    expect(await count()).toBe(readers.length);
    // as if the worker died before the campaign was marked sent: the job runs again
    await db
      .updateTable('campaigns')
      .set({ status: 'sending', finished_at: null })
      .where('id', '=', id)
      .execute();
    expect(await sendCampaignBatch(server.runtime.ctx, id)).toBe(0);
    expect(await count()).toBe(readers.length);
    await waitForCampaignStatus(server, key, id, 'sent');
    expect(messagesOf(id)).toHaveLength(readers.length);
  });

  it('sends a campaign larger than one batch: every recipient exactly once, from a verified domain', async () => {
    await insertVerifiedDomain(server, account.project.id, 'letters.example');
    const big = (await server.call('POST', '/v1/lists', { key, body: { name: 'Big' } })).body.id;
    const addresses = Array.from({ length: 1_100 }, (_, i) => `reader${i}@many.example`);
    for (const emails of [addresses.slice(0, 1_000), addresses.slice(1_000)]) {
      const added = await server.call('POST', `/v1/lists/${big}/contacts`, { key, body: { emails } });
      expect(added.status, JSON.stringify(added.body)).toBe(200);
    }
    const id = await createCampaign(campaign({ name: 'Big', from: 'news@letters.example', list_ids: [big] }));
    const started = await send(id);
    expect(started.body.recipient_count).toBe(addresses.length);
    await waitForCampaignStatus(server, key, id, 'sent');
    const received = messagesOf(id).flatMap((m) => m.to);
    expect(received).toHaveLength(addresses.length);
    expect(new Set(received)).toEqual(new Set(addresses));
  }, 90_000);

  it('an overlapping list and segment with suppressed, unsubscribed and list-unsubscribed contacts reaches exactly the expected addresses, each signed with the footer and one-click headers', async () => {
    type Person = { email: string; inList?: boolean; vip?: boolean; state?: string };
    const people: Person[] = [
      { email: 'list@overlap.example', inList: true },
      { email: 'segment@overlap.example', vip: true },
      { email: 'both@overlap.example', inList: true, vip: true },
      { email: 'unsubscribed@overlap.example', inList: true, vip: true, state: 'unsubscribed' },
      { email: 'bounced@overlap.example', inList: true, state: 'hard_bounce' },
      { email: 'complained@overlap.example', vip: true, state: 'complaint' },
      { email: 'left-list@overlap.example', inList: true, state: 'left_list' },
      { email: 'left-list-vip@overlap.example', inList: true, vip: true, state: 'left_list' },
      { email: 'outsider@overlap.example' },
    ];
    for (const p of people) {
      const res = await server.call('POST', '/v1/contacts', {
        key,
        body: { email: p.email, first_name: 'Pat', properties: { tier: p.vip ? 'vip' : 'basic' } },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      if (p.state === 'unsubscribed')
        expect(
          (await server.call('PATCH', `/v1/contacts/${res.body.id}`, { key, body: { subscribed: false } }))
            .status,
        ).toBe(200);
    }
    const overlap = (await server.call('POST', '/v1/lists', { key, body: { name: 'Overlap' } })).body.id;
    const inList = people.filter((p) => p.inList).map((p) => p.email);
    expect(
      (await server.call('POST', `/v1/lists/${overlap}/contacts`, { key, body: { emails: inList } })).status,
    ).toBe(200);
    const leavers = people.filter((p) => p.state === 'left_list').map((p) => p.email);
    expect(
      (await server.call('POST', `/v1/lists/${overlap}/unsubscribe`, { key, body: { emails: leavers } }))
        .status,
    ).toBe(200);
    const vips = await server.call('POST', '/v1/segments', {
      key,
      body: { name: 'VIPs', definition: { all: [{ field: 'properties.tier', op: 'equals', value: 'vip' }] } },
    });
    expect(vips.status, JSON.stringify(vips.body)).toBe(200);
    // bounces and complaints come from delivery reports: recorded the way delivery records them
    await suppress(
      server.runtime.ctx.db,
      people
        .filter((p) => p.state === 'hard_bounce' || p.state === 'complaint')
        .map((p) => ({ projectId: account.project.id, email: p.email, reason: p.state as 'hard_bounce' })),
    );
    // computed here from the rules, not read back from Posthorn
    const expected = people
      .filter((p) => p.state === undefined || (p.state === 'left_list' && p.vip))
      .filter((p) => p.inList || p.vip)
      .map((p) => p.email)
      .sort();
    expect(expected).toEqual([
      'both@overlap.example',
      'left-list-vip@overlap.example',
      'list@overlap.example',
      'segment@overlap.example',
    ]);

    const id = await createCampaign(
      campaign({ name: 'Overlap', list_ids: [overlap], segment_ids: [vips.body.id] }),
    );
    const started = await send(id);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    await waitForCampaignStatus(server, key, id, 'sent');
    const messages = messagesOf(id);
    expect(messages.flatMap((m) => m.to).sort()).toEqual(expected);
    const { resolver } = await sharedDkimResolver(server);
    for (const message of messages) {
      expect(message.parsed.html).toContain('2 High Street, Leeds LS1 1AA');
      expect(message.parsed.text).toContain('2 High Street, Leeds LS1 1AA');
      const head = unfoldedHeaders(message.raw);
      expect(head).toMatch(/^List-Unsubscribe: <http:\/\/[^>]+\/u\/[\w-]+>$/m);
      expect(head).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click$/m);
      const verified = await dkimVerify(message.raw, { resolver });
      expect(verified.results[0].status.result).toBe('pass');
      const signed = /\bh=([^;]+)/.exec(head.match(/^DKIM-Signature:.*$/m)?.[0] ?? '')?.[1];
      expect(String(signed).replace(/\s/g, '').toLowerCase().split(':')).toEqual(
        expect.arrayContaining(['list-unsubscribe', 'list-unsubscribe-post']),
      );
    }
  });

  it('refuses an empty audience with 400', async () => {
    const empty = (await server.call('POST', '/v1/lists', { key, body: { name: 'Empty' } })).body.id;
    const id = await createCampaign(campaign({ list_ids: [empty] }));
    expectError(await send(id), 400, /no recipients/);
    expect((await server.call('GET', `/v1/campaigns/${id}`, { key })).body.status).toBe('draft');
  });

  it('after a one-click unsubscribe, the next campaign skips that contact; transactional mail still flows', async () => {
    const first = await createCampaign(campaign({ name: 'Before' }));
    expect((await send(first)).status).toBe(200);
    await waitForCampaignStatus(server, key, first, 'sent');
    const leaver = readers[1];
    const message = messagesOf(first).find((m) => m.to[0] === leaver) as SinkMessage;
    const oneClick = /^List-Unsubscribe: <([^>]+)>/m.exec(unfoldedHeaders(message.raw))?.[1] as string;
    // as mailbox providers do it: a POST with the RFC 8058 body, no cookie, no confirmation
    const res = await fetch(`${server.url}${new URL(oneClick).pathname}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    expect(res.status).toBe(200);

    const second = await createCampaign(campaign({ name: 'After' }));
    const started = await send(second);
    expect(started.body.recipient_count).toBe(readers.length - 1);
    await waitForCampaignStatus(server, key, second, 'sent');
    expect(
      messagesOf(second)
        .flatMap((m) => m.to)
        .sort(),
    ).toEqual(readers.filter((r) => r !== leaver).sort());

    const receipt = await server.call('POST', '/v1/emails', {
      key,
      body: { from: FROM, to: leaver, subject: 'Your receipt', text: 'Thanks for your order' },
    });
    expect(receipt.status).toBe(200);
    await waitForStatus(server, key, receipt.body.id, 'sent');
    await server.sink.waitFor((m) => m.to[0] === leaver && m.parsed.subject === 'Your receipt');
  });

  it('refuses with 402 before any message when the audience would pass the monthly allowance', async () => {
    const other = await server.signupConfirmed();
    const k = other.project_key.key;
    await server.call('PATCH', '/v1/me/footer', { key: k, body: { address: ADDRESS } });
    const theirs = (await server.call('POST', '/v1/lists', { key: k, body: { name: 'All' } })).body.id;
    await server.call('POST', `/v1/lists/${theirs}/contacts`, { key: k, body: { emails: readers } });
    // the free plan's 3,000 messages a month, all but two used
    await addUsageToday(server, other.project.id, { sent: 2_998, shared_domain_sent: 0 });
    const id = await createCampaign(campaign({ list_ids: [theirs] }), k);
    const refused = await send(id, k);
    expect(refused.status, JSON.stringify(refused.body)).toBe(402);
    expect(refused.body).toMatchObject({
      feature: 'sending_overage',
      error: expect.stringMatching(/3000 messages a month/),
    });
    const emails = await server.runtime.ctx.db
      .selectFrom('emails')
      .select('id')
      .where('project_id', '=', other.project.id)
      .execute();
    expect(emails).toHaveLength(0);
  });
});
