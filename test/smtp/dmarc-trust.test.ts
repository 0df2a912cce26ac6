import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addDays, dayOf } from '../../src/domain/core/clock.ts';
import { REPORTS_PER_REPORTER_PER_DAY } from '../../src/domain/dmarc/limits.ts';
import { aggregateXml, type MadeRecord, reportMessage } from '../helpers/dmarc.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { insertVerifiedDomain } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { deliverToMx } from '../helpers/smtp-clients.ts';

/**
 * Forged reports cannot steer the policy coach (issue 47, build item 1). A domain that has sent
 * nothing gets 31 back-dated reports, sent within seconds, that show Posthorn's own mail aligned
 * every day for a month (the attack that made the coach propose p=quarantine): from mail that
 * claims Google but fails DMARC they count for nothing (shown apart as unauthenticated, no alert);
 * from a reporter whose mail passes DMARC they still observe one day, not 31. A reporter's reports
 * are kept REPORTS_PER_REPORTER_PER_DAY a day; unauthenticated mail shares one such budget.
 */

const DOMAIN = 'forged.example';
const today = dayOf(new Date());

let server: TestServer;
let dns: TestDnsServer;
let key: string;
let domainId: string;
let rua: string;

beforeAll(async () => {
  dns = await startDnsServer();
  // Google sends from its own addresses: mail from here that claims it fails SPF, and DMARC
  dns.zone.set('google.com', [{ type: 'TXT', data: 'v=spf1 ip4:192.0.2.1 -all' }]);
  dns.zone.set('_dmarc.google.com', [{ type: 'TXT', data: 'v=DMARC1; p=reject' }]);
  // a reporter whose mail from here passes (anyone can own a domain that does)
  dns.zone.set('reporter.example', [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }]);
  dns.zone.set('_dmarc.reporter.example', [{ type: 'TXT', data: 'v=DMARC1; p=reject' }]);
  server = await startTestServer(
    { POSTHORN_SMTP_PORT: '0', POSTHORN_MX_PORT: '0', POSTHORN_DNS_SERVERS: dns.address },
    ['api', 'worker', 'smtp'],
  );
  const account = await server.signupConfirmed();
  key = account.project_key.key;
  domainId = (await insertVerifiedDomain(server, account.project.id, DOMAIN)).id;
  await server.runtime.ctx.db
    .updateTable('domains')
    .set({ dkim_selector: 'ph1' })
    .where('id', '=', domainId)
    .execute();
  const domain = (await server.call('GET', `/v1/domains/${domainId}`, { key })).body;
  rua = domain.records.find((r: { name: string }) => r.name === `_dmarc.${DOMAIN}`).value.split('mailto:')[1];
}, 60_000);
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

/** Posthorn's own mail, all aligned, and an unknown source with volume (an alert's worth). */
const spotless: MadeRecord[] = [
  { ip: '198.51.100.10', count: 500, dkim: 'pass', spf: 'pass', selector: 'ph1' },
  { ip: '192.0.2.66', count: 15, dkim: 'fail', spf: 'fail' },
];

/** Mails one report of `day` from `reporter` (its mail's From: dmarc@reporter); the 250's text. */
async function send(reporter: string, day: string, reportId = `${reporter}-${day}`) {
  const xml = aggregateXml({ reporter, reportId, domain: DOMAIN, day, records: spotless });
  const sent = await deliverToMx(
    server,
    { from: `dmarc@${reporter}`, to: [rua] },
    reportMessage(xml, rua, reporter, DOMAIN, reportId),
  );
  expect(sent.ok, sent.response).toBe(true);
  return sent.response as string;
}

const dmarcOf = async () => {
  const res = await server.call('GET', `/v1/domains/${domainId}/dmarc`, { key });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};

/** Waits until every queued dmarc_alerts job has run; answers the domain's alerts. */
async function alertsOnceJudged() {
  await eventually(async () => {
    const { rows } = await server.runtime.ctx.pool.query(
      `select count(*)::int as n from graphile_worker.jobs where task_identifier = 'dmarc_alerts'`,
    );
    expect(rows[0].n).toBe(0);
  });
  return server.runtime.ctx.db
    .selectFrom('dmarc_alerts')
    .select('kind')
    .where('domain_id', '=', domainId)
    .execute();
}

describe('forged reports', () => {
  it('31 back-dated reports from mail that claims Google but fails DMARC count for nothing', async () => {
    for (let n = 31; n >= 1; n--)
      expect(await send('google.com', addDays(today, -n))).toMatch(/reports: 1 stored$/);
    const body = await dmarcOf();
    expect(body.coach).toMatchObject({ state: 'no_reports', proposal: null, days_observed: 0 });
    expect(body.summary).toMatchObject({ messages: 0, reports: 0, policy: null });
    expect(body.sources).toEqual([]);
    // shown apart: the reports received over the last 30 days
    expect(body.unauthenticated).toEqual({ reports: 31, messages: 31 * 515, reporters: ['google.com'] });
    expect(body.reports).toHaveLength(31);
    expect(body.reports[0]).toMatchObject({
      kind: 'aggregate',
      reporter: 'google.com',
      reporter_domain: 'google.com',
      authenticated: false,
    });
    expect(await alertsOnceJudged()).toEqual([]);
  });

  it('31 back-dated reports sent within seconds, their mail authenticated, observe one day', async () => {
    for (let n = 31; n >= 1; n--) await send('reporter.example', addDays(today, -n));
    const body = await dmarcOf();
    expect(body.summary).toMatchObject({ messages: 30 * 515, reports: 30, policy: 'none' });
    expect(body.coach).toMatchObject({ state: 'observing', proposal: null, days_observed: 1 });
    expect(body.coach.message).toMatch(
      /^1 of 30 days of reports under p=none \(they name 31 days but arrived over 1/,
    );
    expect(body.reports[0]).toMatchObject({ reporter_domain: 'reporter.example', authenticated: true });
    // the same reports having arrived over a month (each as its day began): the coach proposes
    await server.runtime.ctx.pool.query(
      `update dmarc_reports set received_at = begin_at where domain_id = $1 and authenticated`,
      [domainId],
    );
    expect((await dmarcOf()).coach).toMatchObject({ state: 'propose', days_observed: 31 });
  });

  it(`keeps ${REPORTS_PER_REPORTER_PER_DAY} reports of a reporter a day, and answers 250 past them`, async () => {
    // the authenticated reporter's 31 arrived "over a month" above: 50 more today, then one dropped
    for (let n = 0; n < REPORTS_PER_REPORTER_PER_DAY; n++)
      expect(await send('reporter.example', today, `today-${n}`)).toMatch(/reports: 1 stored$/);
    expect(await send('reporter.example', today, 'one-too-many')).toMatch(
      /^250 .*reports: 1 dropped \(past the reporter's reports of the day\)$/,
    );
    // unauthenticated mail, whatever From it claims, shares one budget: 31 kept above, 19 more
    for (let n = 0; n < REPORTS_PER_REPORTER_PER_DAY - 31; n++)
      expect(await send(`claims-${n}.example`, today)).toMatch(/reports: 1 stored$/);
    expect(await send('claims-another.example', today)).toMatch(/reports: 1 dropped/);
    const kept = await server.runtime.ctx.db
      .selectFrom('dmarc_reports')
      .select(['report_id'])
      .where('domain_id', '=', domainId)
      .where('report_id', 'in', ['one-too-many', `claims-another.example-${today}`])
      .execute();
    expect(kept).toEqual([]);
  }, 120_000);
});
