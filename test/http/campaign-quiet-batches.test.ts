import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { sendCampaignBatch } from '../../src/domain/campaigns/send-batch.ts';
import { moveClock, now, resetClock } from '../../src/domain/core/clock.ts';
import { nextLocal } from '../../src/domain/core/local-time.ts';
import { okCall } from '../helpers/assertions.ts';
import { FROM } from '../helpers/emails.ts';
import { signupConfirmedInDatabase, startTestServer, type TestServer } from '../helpers/server.ts';
import { zoneAt } from '../helpers/zones.ts';

/**
 * Quiet hours are judged again as each batch of a campaign is written (issue 50, build item 4): a
 * campaign still writing after its recipients' local time moved into the project's quiet hours (a
 * throttled or warming-up one, hours after its snapshot) holds them until the quiet hours end in
 * their zone, while recipients elsewhere go on. The writer is called here as its job calls it (no
 * worker runs), with the service's clock (core/clock.ts) moved as the local-time tests move it.
 */

let server: TestServer;
let key: string;

const call = (method: string, path: string, body?: unknown) => okCall(server, key, method, path, body);

beforeAll(async () => {
  server = await startTestServer({}, ['api']);
  // a marketing sender (confirmed in the database: no worker runs to send its code)
  const account = await signupConfirmedInDatabase(server);
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'starter');
  key = account.project_key.key;
  await call('PATCH', '/v1/me/footer', { address: 'Quiet Tests Ltd, 9 Hush Lane, York YO1 7HH' });
  await call('PATCH', '/v1/me/local-time', { time_zone: 'UTC', quiet_hours: { from: '21:00', to: '08:00' } });
}, 60_000);
afterAll(async () => {
  resetClock();
  await server?.close();
});

const recipients = async (campaignId: string) =>
  new Map(
    (
      await server.runtime.ctx.db
        .selectFrom('campaign_recipients')
        .select(['email', 'status', 'send_after'])
        .where('campaign_id', '=', campaignId)
        .execute()
    ).map((r) => [r.email, r]),
  );

describe('quiet hours and a campaign still writing', () => {
  it('hold the recipients whose local time moved into them since the snapshot, until they end', async () => {
    // 20:xx for the evening readers now, 10:xx for the others: nobody is in quiet hours at the snapshot
    const evening = zoneAt(20);
    const morning = zoneAt(10);
    const readers = [
      { email: 'eve1@quiet.example', zone: evening },
      { email: 'eve2@quiet.example', zone: evening },
      { email: 'morn@quiet.example', zone: morning },
    ];
    const list = await call('POST', '/v1/lists', { name: 'Evening and morning' });
    for (const r of readers)
      await call('POST', '/v1/contacts', { email: r.email, properties: { timezone: r.zone } });
    await call('POST', `/v1/lists/${list.id}/contacts`, { emails: readers.map((r) => r.email) });
    const campaign = await call('POST', '/v1/campaigns', {
      name: 'Evening news',
      from: FROM,
      subject: 'News',
      html: '<p>News</p>',
      list_ids: [list.id],
    });
    await call('POST', `/v1/campaigns/${campaign.id}/send`);
    // due at once: the snapshot's send_after is the start for each
    for (const r of (await recipients(campaign.id)).values())
      expect(r.send_after?.getTime() ?? 0).toBeLessThanOrEqual(now().getTime());

    // an hour later (the campaign throttled, say): 21:xx for the evening readers, 11:xx for the other
    moveClock(3_600_000);
    await sendCampaignBatch(server.runtime.ctx, campaign.id);
    const after = await recipients(campaign.id);
    expect(after.get('morn@quiet.example')?.status).toBe('queued');
    const eightLocal = nextLocal(now().getTime(), evening, 8 * 60);
    for (const email of ['eve1@quiet.example', 'eve2@quiet.example']) {
      expect(after.get(email)?.status, email).toBe('pending');
      expect(after.get(email)?.send_after?.getTime(), email).toBe(eightLocal);
    }
    const shown = await call('GET', `/v1/campaigns/${campaign.id}`);
    expect(shown.waiting).toEqual([{ at: new Date(eightLocal).toISOString(), count: 2 }]);

    // still inside them: the writer takes nobody
    await sendCampaignBatch(server.runtime.ctx, campaign.id);
    expect((await recipients(campaign.id)).get('eve1@quiet.example')?.status).toBe('pending');

    // 08:00 in their zone: both are written
    moveClock(eightLocal + 1_000 - now().getTime());
    await sendCampaignBatch(server.runtime.ctx, campaign.id);
    const morningAfter = await recipients(campaign.id);
    for (const email of ['eve1@quiet.example', 'eve2@quiet.example'])
      expect(morningAfter.get(email)?.status, email).toBe('queued');
  }, 60_000);
});
