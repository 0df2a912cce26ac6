import { describe, expect, it } from 'vitest';
import { insertReaders } from '../helpers/audience.ts';
import { crashTestBed, messageIdsByRecipient } from '../helpers/crash-test.ts';
import { eventually } from '../helpers/eventually.ts';

const SECRET = 'campaign-crash-test-secret-0123456789abcd';
const RECIPIENTS = 20_000;
/** How many campaign messages must have arrived before the worker is killed. */
const KILL_AFTER = 4_000;
const DOMAIN = 'crash-letters.example';

const bed = crashTestBed(SECRET);

describe(`a worker killed with SIGKILL midway through a ${RECIPIENTS}-recipient campaign`, () => {
  it('after a restart each recipient has exactly one Message-ID in the sink and the campaign is sent', async () => {
    const { server, sink, workers, startWorker } = bed;
    const began = Date.now();
    const account = await bed.marketingAccount(DOMAIN);
    const key = account.project_key.key;
    const db = server.runtime.ctx.db;
    const list = (await server.call('POST', '/v1/lists', { key, body: { name: 'Everyone' } })).body.id;
    const audience = new Set(
      await insertReaders(db, {
        projectId: account.project.id,
        listId: list,
        count: RECIPIENTS,
        domain: 'crash.example',
      }),
    );

    const created = await server.call('POST', '/v1/campaigns', {
      key,
      body: {
        name: 'Crash course',
        from: `news@${DOMAIN}`,
        from_name: 'Crash News',
        subject: 'Hello {{ contact.first_name }}',
        html: '<p>Hello {{ contact.first_name }}, <a href="https://shop.example.com/">see the shop</a></p>',
        list_ids: [list],
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id: string = created.body.id;
    const ofCampaign = () => sink.messages.filter((m) => m.feedbackId?.includes(id));
    const status = async () => (await server.call('GET', `/v1/campaigns/${id}`, { key })).body.status;

    const first = startWorker(sink.url);
    const started = await server.call('POST', `/v1/campaigns/${id}/send`, { key });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(started.body.recipient_count).toBe(RECIPIENTS);
    const sendAt = Date.now();
    await eventually(
      () => {
        if (sink.messages.length < KILL_AFTER) throw new Error(`${sink.messages.length} received`);
      },
      { timeoutMs: 120_000, intervalMs: 10, message: `fewer than ${KILL_AFTER} campaign messages arrived` },
    );
    await workers.stop(first, 'SIGKILL');
    const beforeKill = ofCampaign().length;
    // killed midway: neither the sink nor the campaign has seen the end
    expect(beforeKill).toBeLessThan(RECIPIENTS);
    expect(await status()).toBe('sending');
    const unwritten = await db
      .selectFrom('campaign_recipients')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('campaign_id', '=', id)
      .where('status', '=', 'pending')
      .executeTakeFirstOrThrow();

    const restartAt = Date.now();
    startWorker(sink.url);
    await eventually(
      async () => {
        const now = await status();
        if (now !== 'sent') throw new Error(`status ${now}, ${ofCampaign().length} messages received`);
      },
      { timeoutMs: 240_000, intervalMs: 250, message: 'the restarted worker never finished the campaign' },
    );
    const sentAt = Date.now();

    const messages = ofCampaign();
    // one envelope recipient per message, and every one of them in the audience
    expect(messages.filter((m) => m.to.length !== 1)).toEqual([]);
    const outsiders = [...new Set(messages.flatMap((m) => m.to))].filter((to) => !audience.has(to));
    expect(outsiders).toEqual([]);
    // every address of the audience got exactly one message (by Message-ID); repeats are at-least-once
    const { byRecipient, repeated } = messageIdsByRecipient(messages);
    expect(byRecipient.size).toBe(RECIPIENTS);
    const notOne = [...byRecipient].filter(([, ids]) => ids.size !== 1);
    expect(notOne.slice(0, 5).map(([to, ids]) => [to, [...ids]])).toEqual([]);

    // the snapshot: one row per recipient, each with its email, whose Message-ID is the one received
    const rows = await db
      .selectFrom('campaign_recipients as r')
      .leftJoin('emails as e', 'e.id', 'r.email_id')
      .select(['r.email as address', 'r.status', 'r.email_id', 'e.message_id', 'e.status as email_status'])
      .where('r.campaign_id', '=', id)
      .execute();
    expect(rows).toHaveLength(RECIPIENTS);
    expect(rows.filter((r) => r.email_id === null || r.status !== 'queued')).toEqual([]);
    expect(rows.filter((r) => r.email_status !== 'sent')).toEqual([]);
    const wrongId = rows.filter((r) => !byRecipient.get(r.address)?.has(r.message_id as string));
    expect(wrongId.slice(0, 5)).toEqual([]);
    const emails = await db
      .selectFrom('emails')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('campaign_id', '=', id)
      .executeTakeFirstOrThrow();
    expect(Number(emails.n)).toBe(RECIPIENTS);

    console.log(
      `campaign crash: ${RECIPIENTS} recipients, ${beforeKill} delivered before SIGKILL (${((restartAt - sendAt) / 1000).toFixed(1)} s after /send, ` +
        `${unwritten.n} recipients not yet written), ` +
        `${messages.length} received in all, ${repeated} repeated deliveries (same Message-ID), 0 lost; ` +
        `sent ${((sentAt - restartAt) / 1000).toFixed(1)} s after the restart, ${((sentAt - began) / 1000).toFixed(1)} s in all`,
    );
  }, 300_000);
});
