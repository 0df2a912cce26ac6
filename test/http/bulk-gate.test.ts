import { writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { publishRecords } from '../helpers/dns-zone.ts';
import { signupConfirmedInDatabase, startTestServer, type TestServer } from '../helpers/server.ts';
import { SIM_NETWORKS } from '../helpers/sim-internet.ts';
import { type SmtpSink, startSmtpSink } from '../helpers/smtp-sink.ts';

/**
 * The bulk-sender gate (issue 33, item 3) judged against a real DNS server and a real HTTP path:
 * a campaign is refused for each failing check (DKIM, SPF, DMARC, reverse DNS of a direct route's
 * source address, one-click unsubscribe at the public URL), each is fixed in turn as its owner
 * would (a record published, the proxy in front of the public URL set right), and the send starts
 * once all pass; an admin's override is recorded with the failures; a flow's activation meets the
 * same gate for the addresses its steps send from.
 */

const DOMAIN = 'gate.example';
const ADDRESS = 'Gate Tests Ltd, 1 Quay Street, Bristol BS1 4DJ';
const MJML =
  '<mjml><mj-body><mj-section><mj-column><mj-text>Hello</mj-text></mj-column></mj-section></mj-body></mjml>';

let dns: TestDnsServer;
let server: TestServer;
let sink: SmtpSink;
let key: string;
let list: string;
let records: { type: string; name: string; value: string; required: boolean }[];

/** What stands in front of POSTHORN_PUBLIC_URL: first a login page's redirect, then the server itself. */
let forward = false;
const proxy: Server = createServer((req, res) => {
  if (!forward) {
    res.writeHead(302, { location: '/login', 'set-cookie': 'session=1' }).end();
    return;
  }
  const target = new URL(server.url);
  const upstream = httpRequest(
    { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  req.pipe(upstream);
});

type Item = { id: string; status: string; message: string };
const checklist = async (id: string) => {
  const res = await server.call('GET', `/v1/campaigns/${id}/checklist`, { key });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return Object.fromEntries((res.body.items as Item[]).map((i) => [i.id, i])) as Record<string, Item>;
};
const GATE = ['dkim', 'spf', 'dmarc', 'reverse_dns', 'unsubscribe'];
const failingGate = async (id: string) =>
  Object.values(await checklist(id))
    .filter((i) => GATE.includes(i.id) && i.status !== 'ok')
    .map((i) => i.id);

const newCampaign = async (name: string) => {
  const made = await server.call('POST', '/v1/campaigns', {
    key,
    body: { name, from: `News <news@${DOMAIN}>`, subject: 'Hello', html: '<p>Hello</p>', list_ids: [list] },
  });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  return made.body.id as string;
};

beforeAll(async () => {
  dns = await startDnsServer();
  sink = await startSmtpSink();
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const routesFile = path.join(tmpdir(), `gate-routes-${process.pid}.json`);
  writeFileSync(
    routesFile,
    JSON.stringify({
      routes: {
        relay: { type: 'smtp', url: sink.url },
        direct: {
          type: 'direct',
          allow_networks: SIM_NETWORKS,
          source_addresses: [{ address: '127.0.0.1', ehlo: `mta.${DOMAIN}` }],
        },
      },
      rules: [
        { match: { stream: 'marketing' }, routes: ['direct'] },
        { match: {}, routes: ['relay'] },
      ],
    }),
  );
  server = await startTestServer({
    POSTHORN_BULK_GATE: 'enforce',
    POSTHORN_DNS_SERVERS: dns.address,
    POSTHORN_PUBLIC_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    POSTHORN_SMTP_RELAY: '',
    POSTHORN_ROUTES: routesFile,
  });
  // the code email goes through this test's own relay: confirmed in the database instead
  const account = await signupConfirmedInDatabase(server);
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  expect((await server.call('PATCH', '/v1/me/footer', { key, body: { address: ADDRESS } })).status).toBe(200);
  list = (await server.call('POST', '/v1/lists', { key, body: { name: 'Readers' } })).body.id;
  const added = await server.call('POST', `/v1/lists/${list}/contacts`, {
    key,
    body: { emails: ['delivered+1@simulator.posthorn.test', 'delivered+2@simulator.posthorn.test'] },
  });
  expect(added.status, JSON.stringify(added.body)).toBe(200);
  // the domain verified as its owner does it: the required records published, then checked
  const domain = await server.call('POST', '/v1/domains', { key, body: { domain: DOMAIN } });
  records = domain.body.records;
  publishRecords(
    dns,
    records.filter((r) => r.required),
  );
  const checked = await server.call('POST', `/v1/domains/${domain.body.id}/check`, { key });
  expect(checked.body.status).toBe('verified');
}, 60_000);
afterAll(async () => {
  await server?.close();
  await sink?.close();
  await dns?.close();
  proxy.close();
});

describe('the bulk-sender gate', () => {
  it('refuses a campaign for each failing check, passing once each is fixed', async () => {
    const id = await newCampaign('Gated news');
    const contactsBefore = (await server.call('GET', '/v1/contacts', { key })).body.data.length;
    const dkim = records.find((r) => r.name.includes('._domainkey.')) as (typeof records)[number];
    const spfName = (
      records.find((r) => r.type === 'TXT' && r.value.startsWith('v=spf1')) as (typeof records)[number]
    ).name;
    // since it was verified, the DKIM record went missing
    dns.zone.delete(dkim.name);

    const fixes: [string, () => void][] = [
      ['dkim', () => publishRecords(dns, [dkim])],
      // the direct route's address added to the return path's SPF
      ['spf', () => dns.zone.set(spfName, [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 ~all' }])],
      ['dmarc', () => dns.zone.set(`_dmarc.${DOMAIN}`, [{ type: 'TXT', data: 'v=DMARC1; p=none' }])],
      [
        'reverse_dns',
        () => {
          dns.zone.set('1.0.0.127.in-addr.arpa', [{ type: 'PTR', domain: `mta.${DOMAIN}` }]);
          dns.zone.set(`mta.${DOMAIN}`, [{ type: 'A', address: '127.0.0.1' }]);
        },
      ],
      ['unsubscribe', () => (forward = true)],
    ];
    const first = await checklist(id);
    expect(first.dkim.message).toMatch(/DKIM is \w+ with .*\._domainkey\.gate\.example/);
    expect(first.spf.message).toMatch(/SPF of bounces\.gate\.example is \w+ for 127\.0\.0\.1/);
    expect(first.dmarc.message).toMatch(/No DMARC record at _dmarc\.gate\.example/);
    expect(first.reverse_dns.message).toMatch(/127\.0\.0\.1: has no reverse DNS/);
    expect(first.unsubscribe.message).toMatch(/answered 302 \(a redirect/);

    for (const [index, [check, fix]] of fixes.entries()) {
      const failing = GATE.slice(index);
      expect(await failingGate(id), `before fixing ${check}`).toEqual(failing);
      const refused = await server.call('POST', `/v1/campaigns/${id}/send`, { key });
      expect(refused.status, JSON.stringify(refused.body)).toBe(400);
      expect(refused.body.error).toMatch(/fails the bulk-sender checks/);
      for (const f of failing) expect(refused.body.error).toContain(`${f}: `);
      fix();
    }
    expect(await failingGate(id)).toEqual([]);
    const checks = await checklist(id);
    expect(checks.unsubscribe.message).toMatch(/unsubscribed a test contact \(RFC 8058\)/);
    expect(checks.reverse_dns.status).toBe('ok');

    const sent = await server.call('POST', `/v1/campaigns/${id}/send`, { key });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body.status).toBe('sending');
    // the canaries were removed: the project's contacts are the readers alone, and no override
    expect((await server.call('GET', '/v1/contacts', { key })).body.data.length).toBe(contactsBefore);
    const overrides = await server.runtime.ctx.db.selectFrom('gate_overrides').selectAll().execute();
    expect(overrides).toEqual([]);
  });

  it('lets an admin send despite a failing check, recording who, why and what failed', async () => {
    const id = await newCampaign('Overridden news');
    dns.zone.delete(`_dmarc.${DOMAIN}`);
    expect(await failingGate(id)).toEqual(['dmarc']);
    const noReason = await server.call('POST', `/v1/campaigns/${id}/send`, {
      key,
      body: { gate_override: { reason: '' } },
    });
    expect(noReason.status).toBe(400);
    const sent = await server.call('POST', `/v1/campaigns/${id}/send`, {
      key,
      body: { gate_override: { reason: 'DMARC is being set up by our DNS host today' } },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const [override] = await server.runtime.ctx.db
      .selectFrom('gate_overrides')
      .selectAll()
      .where('key', '=', id)
      .execute();
    expect(override).toMatchObject({
      scope: 'campaign',
      reason: 'DMARC is being set up by our DNS host today',
      overridden_by: expect.stringMatching(/^key /),
      failures: [{ id: 'dmarc', message: expect.stringMatching(/No DMARC record/) }],
    });
    const shown = await checklist(id);
    expect(shown.dmarc.status).toBe('ok');
    expect(shown.dmarc.message).toMatch(
      /^Overridden by key .* \(DMARC is being set up by our DNS host today\)/,
    );
  });

  it("holds a flow's activation to the same checks for the addresses its steps send from", async () => {
    const template = await server.call('POST', '/v1/templates', {
      key,
      body: { name: 'Welcome', subject: 'Welcome', mjml: MJML },
    });
    expect((await server.call('POST', `/v1/templates/${template.body.id}/publish`, { key })).status).toBe(
      200,
    );
    const flow = await server.call('POST', '/v1/flows', {
      key,
      body: {
        name: 'Welcome flow',
        from: `Hello <hello@${DOMAIN}>`,
        trigger: { type: 'list_joined', list_id: list },
        steps: [{ id: 'welcome', type: 'send', template_id: template.body.id }],
      },
    });
    expect(flow.status, JSON.stringify(flow.body)).toBe(200);
    const refused = await server.call('POST', `/v1/flows/${flow.body.id}/activate`, { key });
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.error).toMatch(
      /Flow "Welcome flow" cannot be activated: it fails the bulk-sender checks/,
    );
    expect(refused.body.error).toMatch(/dmarc: No DMARC record at _dmarc\.gate\.example/);
    // automation leaves by the relay: SPF is judged by the record's include, not an address
    expect(refused.body.error).toMatch(/spf: The SPF record of bounces\.gate\.example does not include/);
    dns.zone.set(`_dmarc.${DOMAIN}`, [{ type: 'TXT', data: 'v=DMARC1; p=quarantine' }]);
    const spf = records.find(
      (r) => r.type === 'TXT' && r.value.startsWith('v=spf1'),
    ) as (typeof records)[number];
    dns.zone.set(spf.name, [{ type: 'TXT', data: spf.value.replace('v=spf1', 'v=spf1 ip4:127.0.0.1') }]);
    const activated = await server.call('POST', `/v1/flows/${flow.body.id}/activate`, { key });
    expect(activated.status, JSON.stringify(activated.body)).toBe(200);
    expect(activated.body.status).toBe('active');
  });
});
