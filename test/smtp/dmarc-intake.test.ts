import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addDays, dayOf } from '../../src/domain/core/clock.ts';
import type { AggregateRecord } from '../../src/domain/dmarc/aggregate.ts';
import { storeReports } from '../../src/domain/dmarc/store.ts';
import { aggregateXml, type MadeRecord, reportMessage } from '../helpers/dmarc.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { insertVerifiedDomain } from '../helpers/emails.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { deliverToMx } from '../helpers/smtp-clients.ts';

/**
 * Reports as real and hostile reporters send them, at a domain's report address (issue 47, build
 * item 1): what cannot be read (XXE, entity expansion, 200,000 nested elements, a count of 1e23)
 * is answered 250 and kept as unreadable with its reason, never 451 (a sender would retry it
 * forever); a report whose org_name is empty (and whose date range begins where it ends) is kept
 * and listed under its reporter's address; reports of 10,000 records through the MX and of
 * 100,000 records stored at once are kept whole (one INSERT would pass PostgreSQL's 65,535
 * parameters).
 */

const DOMAIN = 'intake.example';

let server: TestServer;
let dns: TestDnsServer;
let key: string;
let domainId: string;
let rua: string;

beforeAll(async () => {
  dns = await startDnsServer();
  // the small reporter's mail passes DMARC: its report is counted (only authenticated ones are)
  dns.zone.set('small-isp.example', [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }]);
  dns.zone.set('_dmarc.small-isp.example', [{ type: 'TXT', data: 'v=DMARC1; p=none' }]);
  server = await startTestServer(
    { POSTHORN_SMTP_PORT: '0', POSTHORN_MX_PORT: '0', POSTHORN_DNS_SERVERS: dns.address },
    ['api', 'worker', 'smtp'],
  );
  const account = await server.signupConfirmed();
  key = account.project_key.key;
  domainId = (await insertVerifiedDomain(server, account.project.id, DOMAIN)).id;
  const domain = (await server.call('GET', `/v1/domains/${domainId}`, { key })).body;
  rua = domain.records.find((r: { name: string }) => r.name === `_dmarc.${DOMAIN}`).value.split('mailto:')[1];
}, 60_000);
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

const dmarcOf = async () => {
  const res = await server.call('GET', `/v1/domains/${domainId}/dmarc`, { key });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};

/** Mails an aggregate report's XML (gzipped, as reporters do) from dmarc@`reporter`. */
async function mail(xml: string, reporter: string, reportId: string) {
  const sent = await deliverToMx(
    server,
    { from: `dmarc@${reporter}`, to: [rua] },
    reportMessage(xml, rua, reporter, DOMAIN, reportId),
  );
  return sent;
}

const feedback = (inner: string, head = '') =>
  `<?xml version="1.0"?>${head}<feedback><report_metadata><org_name>hostile.example</org_name>` +
  '<report_id>h1</report_id><date_range><begin>1700000000</begin><end>1700086399</end></date_range>' +
  `</report_metadata><policy_published><domain>${DOMAIN}</domain></policy_published>${inner}</feedback>`;
const row = (count: string) =>
  `<record><row><source_ip>192.0.2.1</source_ip><count>${count}</count></row></record>`;

describe('what cannot be read', () => {
  it.each([
    [
      'an external entity (XXE)',
      feedback(`${row('1')}<x>&xxe;</x>`, '<!DOCTYPE feedback [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'),
      /^the XML declares a DOCTYPE/,
    ],
    [
      'entity expansion',
      feedback(
        '<x>&l3;</x>',
        '<!DOCTYPE feedback [<!ENTITY l "lol"><!ENTITY l2 "&l;&l;&l;&l;&l;&l;&l;&l;"><!ENTITY l3 "&l2;&l2;&l2;&l2;&l2;">]>',
      ),
      /^the XML declares a DOCTYPE/,
    ],
    [
      '200,000 nested elements',
      feedback(`${'<x>'.repeat(200_000)}${'</x>'.repeat(200_000)}`),
      /^the XML could not be read/,
    ],
    [
      'a count of 1e23',
      feedback(row('100000000000000000000000')),
      /^record 1: count is 1000.*, more than 1000000000$/,
    ],
  ])('%s: answered 250 and kept as unreadable, with the reason', async (_what, xml, reason) => {
    const before = (await dmarcOf()).reports.length;
    const sent = await mail(xml, 'hostile.example', 'h1');
    expect(sent.ok, sent.response).toBe(true);
    expect(sent.response).toMatch(/^250 .*reports: 1 unreadable \(kept\)$/);
    const { reports } = await dmarcOf();
    expect(reports).toHaveLength(before + 1);
    expect(reports[0]).toMatchObject({ kind: 'unreadable', reason: expect.stringMatching(reason) });
  });
});

describe('reports kept whole', () => {
  it("keeps a report whose org_name is empty, one day long, named by its reporter's address", async () => {
    const day = addDays(dayOf(new Date()), -1);
    const at = Date.parse(`${day}T00:00:00Z`) / 1000;
    const xml = aggregateXml({
      reporter: 'small-isp.example',
      reportId: 'empty-org-1',
      domain: DOMAIN,
      day,
      records: [{ ip: '198.51.100.7', count: 3, dkim: 'pass', spf: 'pass' }],
    })
      .replace(/<org_name>[^<]*<\/org_name><email>[^<]*<\/email>/, '<org_name></org_name>')
      .replace(/<end>\d+<\/end>/, `<end>${at}</end>`);
    expect(xml).toContain(`<begin>${at}</begin><end>${at}</end>`);
    const sent = await deliverToMx(
      server,
      { from: 'reports@small-isp.example', to: [rua] },
      reportMessage(xml, rua, 'small-isp.example', DOMAIN, 'empty-org-1').replace(
        'From: dmarc@small-isp.example',
        'From: "Small ISP" <Reports@Small-ISP.example>',
      ),
    );
    expect(sent.ok, sent.response).toBe(true);
    expect(sent.response).toMatch(/reports: 1 stored$/);
    const body = await dmarcOf();
    expect(body.reports[0]).toMatchObject({
      kind: 'aggregate',
      reporter: 'reports@small-isp.example',
      reporter_domain: 'small-isp.example',
      authenticated: true,
      report_id: 'empty-org-1',
      begin: `${day}T00:00:00.000Z`,
      end: `${day}T00:00:00.000Z`,
      messages: 3,
    });
    expect(body.sources).toContainEqual(expect.objectContaining({ source_ip: '198.51.100.7', messages: 3 }));
  });

  it('stores a report of 10,000 records received at the MX', async () => {
    const records: MadeRecord[] = Array.from({ length: 10_000 }, (_, i) => ({
      ip: `10.1.${i >> 8}.${i & 255}`,
      count: 2,
      dkim: 'pass',
      spf: 'fail',
    }));
    const day = addDays(dayOf(new Date()), -2);
    const xml = aggregateXml({ reporter: 'big.example', reportId: 'big-1', domain: DOMAIN, day, records });
    const sent = await mail(xml, 'big.example', 'big-1');
    expect(sent.ok, sent.response).toBe(true);
    expect(sent.response).toMatch(/reports: 1 stored$/);
    const stored = await server.runtime.ctx.db
      .selectFrom('dmarc_reports')
      .innerJoin('dmarc_records', 'dmarc_records.report_id', 'dmarc_reports.id')
      .select((eb) => [
        eb.fn.countAll<string>().as('n'),
        eb.fn.sum<string>('dmarc_records.count').as('messages'),
      ])
      .where('dmarc_reports.report_id', '=', 'big-1')
      .executeTakeFirstOrThrow();
    expect({ n: Number(stored.n), messages: Number(stored.messages) }).toEqual({
      n: 10_000,
      messages: 20_000,
    });
  }, 120_000);

  it('stores a report of 100,000 records in one go', async () => {
    const records: AggregateRecord[] = Array.from({ length: 100_000 }, (_, i) => ({
      source_ip: `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`,
      count: 1,
      disposition: 'none',
      dkim: 'pass',
      spf: 'pass',
      reasons: [],
      header_from: DOMAIN,
      envelope_from: null,
      envelope_to: null,
      auth: { dkim: [{ domain: DOMAIN, selector: 's1', result: 'pass' }], spf: [] },
      aligned: true,
    }));
    const begin = new Date(Date.parse(`${addDays(dayOf(new Date()), -3)}T00:00:00Z`));
    const outcomes = await storeReports(
      server.runtime.ctx,
      domainId,
      [
        {
          kind: 'aggregate',
          file: 'google.com!intake.example!1!2.xml',
          report: {
            reporter: {
              org_name: 'google.com',
              email: 'noreply-dmarc-support@google.com',
              extra_contact_info: null,
            },
            report_id: 'hundred-thousand',
            begin,
            end: new Date(begin.getTime() + 86_399_000),
            policy: { domain: DOMAIN, adkim: null, aspf: null, p: 'none', sp: null, np: null, pct: 100 },
            errors: [],
            records,
            total: 100_000,
          },
        },
      ],
      Buffer.from('the message'),
    );
    expect(outcomes).toEqual(['stored']);
    const { rows } = await server.runtime.ctx.pool.query(
      `select count(*)::int as n from dmarc_records r join dmarc_reports d on d.id = r.report_id
        where d.report_id = 'hundred-thousand'`,
    );
    expect(rows[0].n).toBe(100_000);
  }, 180_000);
});
