import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { insertVerifiedDomain, waitForCampaignStatus, waitForStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The circuit breaker on a sending domain as a whole (issue 33, item 2): two campaigns from one
 * domain, each too small to be judged alone (fewer messages than POSTHORN_BREAKER_MIN_MESSAGES),
 * whose complaints together cross the stop threshold. The domain's marketing stops: both campaigns
 * are paused with the reason, a new campaign from the domain is refused, transactional mail still
 * flows; an admin resumes the domain with a recorded reason, and a campaign may start again.
 */

const ADDRESS = 'Scope Tests Ltd, 4 Dock Road, Hull HU1 1AA';
const DOMAIN = 'scoped.example';

let server: TestServer;
let key: string;

const call = async (method: string, path: string, body?: unknown) => server.call(method, path, { key, body });

async function campaignTo(name: string, tag: string, size: number, complainEvery: number) {
  const list = (await call('POST', '/v1/lists', { name: `${name} readers` })).body.id;
  const emails = Array.from({ length: size }, (_, i) =>
    i % complainEvery === 3
      ? `complained+${tag}${i}@simulator.posthorn.test`
      : `delivered+${tag}${i}@simulator.posthorn.test`,
  );
  expect((await call('POST', `/v1/lists/${list}/contacts`, { emails })).status).toBe(200);
  const made = await call('POST', '/v1/campaigns', {
    name,
    from: `News <news@${DOMAIN}>`,
    subject: 'Hello',
    html: '<p>Hello</p>',
    list_ids: [list],
  });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  return made.body.id as string;
}

beforeAll(async () => {
  server = await startTestServer();
  const account = await server.signupConfirmed();
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  expect((await call('PATCH', '/v1/me/footer', { address: ADDRESS })).status).toBe(200);
  await insertVerifiedDomain(server, account.project.id, DOMAIN);
}, 60_000);
afterAll(() => server?.close());

describe("a sending domain's complaints across campaigns", () => {
  it("stop the domain's marketing, until an admin resumes it with a reason", async () => {
    // each 150 (under the 200 a rate is judged on), 1 in 50 complaining: 2 % together
    const first = await campaignTo('First', 'a', 150, 50);
    const second = await campaignTo('Second', 'b', 150, 50);
    expect((await call('POST', `/v1/campaigns/${first}/send`)).status).toBe(200);
    expect((await call('POST', `/v1/campaigns/${second}/send`)).status).toBe(200);

    const stops = await eventually(
      async () => {
        type Open = { scope: string; level: string; key: string; messages: number; reason: string };
        const open = (await call('GET', '/v1/breaker')).body.data as Open[];
        const found = open.filter((t) => t.level === 'stop');
        expect(found.map((t) => t.scope).sort()).toEqual(['domain', 'project']);
        return found;
      },
      { timeoutMs: 60_000, intervalMs: 200, message: "the domain's and the project's stops" },
    );
    const domainStop = stops.find((t) => t.scope === 'domain') as (typeof stops)[number];
    expect(domainStop.messages).toBeGreaterThanOrEqual(200);
    expect(domainStop.reason).toMatch(
      /^complaints reached \d+\.\d\d % of \d+ messages \(the stop threshold is 0\.3 %\)$/,
    );
    // neither campaign was judged on its own
    const own = (await call('GET', '/v1/breaker')).body.data.filter(
      (t: { scope: string }) => t.scope === 'campaign',
    );
    expect(own).toEqual([]);

    // whatever of the two had not finished is paused, with the domain's reason
    for (const id of [first, second]) {
      const campaign = await eventually(
        async () => {
          const c = (await call('GET', `/v1/campaigns/${id}`)).body;
          expect(['paused', 'sent']).toContain(c.status);
          return c;
        },
        { timeoutMs: 30_000 },
      );
      if (campaign.status === 'paused')
        expect(campaign.paused_reason).toMatch(
          /^Paused by the circuit breaker: all marketing from scoped\.example: complaints/,
        );
    }
    // a new campaign from the domain does not start
    const third = await campaignTo('Third', 'c', 20, 1000);
    const refused = await call('POST', `/v1/campaigns/${third}/send`);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatch(
      /is paused by the circuit breaker: complaints reached .* POST \/v1\/breaker\/resume/,
    );
    // transactional mail from the domain still flows
    const receipt = await call('POST', '/v1/emails', {
      from: `Receipts <receipts@${DOMAIN}>`,
      to: 'delivered+receipt@simulator.posthorn.test',
      subject: 'Your receipt',
      text: 'Thanks',
    });
    expect(receipt.status).toBe(200);
    await waitForStatus(server, key, receipt.body.id, 'delivered');

    // an admin resumes it, saying why; it is recorded, and mail from the domain starts again
    const bare = await server.call('POST', '/v1/breaker/resume', { key, body: {} });
    expect(bare.status).toBe(400);
    const resumed = await call('POST', '/v1/breaker/resume', { reason: 'Removed the bought list' });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expect(resumed.body.data).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          scope: 'domain',
          resume_reason: 'Removed the bought list',
          resumed_by: expect.stringMatching(/^key /),
        }),
      ]),
    );
    expect((await call('POST', `/v1/campaigns/${third}/send`)).status).toBe(200);
    await waitForCampaignStatus(server, key, third, 'sent');
  }, 120_000);
});
