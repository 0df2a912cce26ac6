import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { insertVerifiedDomain } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { deliverToMx } from '../helpers/smtp-clients.ts';

/**
 * DMARC aggregate and SMTP TLS reports received at Posthorn's MX (issue 34, items 1 and 2): the
 * domain's records name its report addresses, a real SMTP client delivers real reports to them
 * (Google's zipped aggregate report, Google's gzipped TLS report), and the API shows what they
 * say; the same report again is ignored, one that cannot be read is kept with the reason, and an
 * address made up for a domain is refused at RCPT.
 */

const FIXTURES = path.join(import.meta.dirname, '..', 'fixtures', 'dmarc');
const fixture = (name: string) => readFileSync(path.join(FIXTURES, name));

let server: TestServer;
let dns: TestDnsServer;
let account: SignupResult;
let key: string;
let domainId: string;
let rua: string;
let tlsRua: string;

beforeAll(async () => {
  // Google's report mail passes DMARC as it does in the world (SPF from the sending address): only
  // authenticated reports are counted (issue 47)
  dns = await startDnsServer();
  dns.zone.set('google.com', [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }]);
  dns.zone.set('_dmarc.google.com', [{ type: 'TXT', data: 'v=DMARC1; p=reject' }]);
  dns.zone.set('example.com', [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }]);
  dns.zone.set('_dmarc.example.com', [{ type: 'TXT', data: 'v=DMARC1; p=reject' }]);
  server = await startTestServer(
    { POSTHORN_SMTP_PORT: '0', POSTHORN_MX_PORT: '0', POSTHORN_DNS_SERVERS: dns.address },
    ['api', 'worker', 'smtp'],
  );
  account = await server.signupConfirmed();
  key = account.project_key.key;
  domainId = (await insertVerifiedDomain(server, account.project.id, 'borschow.com')).id;
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

describe('reports received at the MX', () => {
  it("names the domain's report addresses in its DMARC and TLS reporting records", async () => {
    const domain = (await server.call('GET', `/v1/domains/${domainId}`, { key })).body;
    const inbound = server.runtime.ctx.config.inboundDomain.replace(/\./g, '\\.');
    const dmarc = domain.records.find((r: { name: string }) => r.name === '_dmarc.borschow.com');
    const tls = domain.records.find((r: { name: string }) => r.name === '_smtp._tls.borschow.com');
    expect(dmarc.value).toMatch(new RegExp(`^v=DMARC1; p=none; rua=mailto:dmarc\\+[0-9a-f]{42}@${inbound}$`));
    expect(tls).toMatchObject({ type: 'TXT', required: false });
    expect(tls.value).toMatch(new RegExp(`^v=TLSRPTv1; rua=mailto:tlsrpt\\+[0-9a-f]{42}@${inbound}$`));
    rua = dmarc.value.split('mailto:')[1];
    tlsRua = tls.value.split('mailto:')[1];
  });

  it("takes Google's zipped aggregate report, once, and shows what it says", async () => {
    const google = fixture('google.com.eml');
    const sent = await deliverToMx(server, { from: 'noreply-dmarc-support@google.com', to: [rua] }, google);
    expect(sent.ok, sent.response).toBe(true);
    const shown = await eventually(async () => {
      const body = await dmarcOf();
      expect(body.reports).toHaveLength(1);
      return body;
    });
    expect(shown.reports[0]).toMatchObject({
      kind: 'aggregate',
      reporter: 'google.com',
      reporter_email: 'noreply-dmarc-support@google.com',
      reporter_domain: 'google.com',
      authenticated: true,
      report_id: '949348866075514174',
      messages: 1,
      reason: null,
    });
    expect(shown.summary).toMatchObject({ messages: 1, reports: 1 });
    expect(shown.sources).toHaveLength(1);
    // the same report again changes nothing
    expect(
      (await deliverToMx(server, { from: 'noreply-dmarc-support@google.com', to: [rua] }, google)).ok,
    ).toBe(true);
    expect((await dmarcOf()).reports).toHaveLength(1);
  });

  it("takes Google's gzipped TLS report at the TLS address", async () => {
    const sent = await deliverToMx(
      server,
      { from: 'noreply-smtp-tls-reporting@google.com', to: [tlsRua] },
      fixture('tls-google.com.eml'),
    );
    expect(sent.ok, sent.response).toBe(true);
    const body = await dmarcOf();
    expect(body.reports.find((r: { kind: string }) => r.kind === 'tls')).toMatchObject({
      reporter: 'Google Inc.',
      messages: 48,
    });
    expect(body.tls.policies).toEqual([
      { policy_domain: 'cardinalhealth.ca', policy_type: 'no-policy-found', successful: 48, failed: 0 },
    ]);
    expect(body.tls.failures).toEqual([]);
  });

  /** The TLS report of tls-example.json as mail from `from`. */
  const tlsReportMail = (from: string, reportId = 'example.com!borschow.com!1704758400!1704844799') => {
    const json = fixture('tls-example.json')
      .toString()
      .replace('"2024-01-09T00:00:00Z_example.com"', JSON.stringify(reportId));
    return [
      `From: ${from}`,
      `To: ${tlsRua}`,
      'Subject: Report Domain: borschow.com Submitter: example.com',
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="b"',
      '',
      '--b',
      `Content-Type: application/tlsrpt+json; name="${reportId}.json"`,
      'Content-Transfer-Encoding: base64',
      `Content-Disposition: attachment; filename="${reportId}.json"`,
      '',
      Buffer.from(json).toString('base64'),
      '--b--',
      '',
    ].join('\r\n');
  };

  it('counts no TLS report whose mail was not authenticated: listed, but its failures not shown', async () => {
    const from = 'smtp-tls-reporting@forger.example';
    expect((await deliverToMx(server, { from, to: [tlsRua] }, tlsReportMail(from, 'forged-1'))).ok).toBe(
      true,
    );
    const res = await server.call('GET', `/v1/domains/${domainId}/dmarc?days=365`, { key });
    expect(res.body.reports).toContainEqual(
      expect.objectContaining({ kind: 'tls', reporter_domain: 'forger.example', authenticated: false }),
    );
    expect(res.body.tls.failures).toEqual([]);
    expect(res.body.tls.policies.map((p: { policy_domain: string }) => p.policy_domain)).toEqual([
      'cardinalhealth.ca',
    ]);
  });

  it('shows TLS failures by receiving domain, MX and type (a JSON report, its two details summed)', async () => {
    const raw = tlsReportMail('smtp-tls-reporting@example.com');
    expect(
      (await deliverToMx(server, { from: 'smtp-tls-reporting@example.com', to: [tlsRua] }, raw)).ok,
    ).toBe(true);
    // the newest 365 days of TLS reports: Google's of September 2024 and this one of January
    const res = await server.call('GET', `/v1/domains/${domainId}/dmarc?days=365`, { key });
    expect(res.body.tls.window).toEqual({ from: '2023-09-05', to: '2024-09-03' });
    expect(res.body.tls.failures).toEqual([
      {
        policy_domain: 'example.com',
        receiving_mx: 'example.com',
        result_type: 'validation-failure',
        sessions: 3,
      },
    ]);
    expect(res.body.tls.policies).toContainEqual({
      policy_domain: 'example.com',
      policy_type: 'sts',
      successful: 0,
      failed: 3,
    });
    // the default 30 days up to the latest report leave January out
    expect((await dmarcOf()).tls.failures).toEqual([]);
    const refused = await server.call('GET', `/v1/domains/${domainId}/dmarc?days=0`, { key });
    expect(refused.status).toBe(400);
  });

  it('keeps a report that cannot be read, with the reason', async () => {
    const invalid = fixture('invalid.xml').toString('base64');
    const raw = [
      'From: reports@broken.example',
      `To: ${rua}`,
      'Subject: Report domain: borschow.com Submitter: broken.example',
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="b"',
      '',
      '--b',
      'Content-Type: application/xml; name="broken.example!borschow.com!1!2.xml"',
      'Content-Transfer-Encoding: base64',
      'Content-Disposition: attachment; filename="broken.example!borschow.com!1!2.xml"',
      '',
      invalid,
      '--b--',
      '',
    ].join('\r\n');
    expect((await deliverToMx(server, { from: 'reports@broken.example', to: [rua] }, raw)).ok).toBe(true);
    const kept = (await dmarcOf()).reports.find((r: { kind: string }) => r.kind === 'unreadable');
    expect(kept).toMatchObject({ file: 'broken.example!borschow.com!1!2.xml' });
    expect(kept.reason).toMatch(/^not well-formed XML/);
    const stored = await server.runtime.ctx.db
      .selectFrom('dmarc_reports')
      .select('raw')
      .where('id', '=', kept.id)
      .executeTakeFirstOrThrow();
    expect(stored.raw?.toString('latin1')).toContain('Submitter: broken.example');
  });

  it("refuses a report address made up for a domain, and hides another project's domain", async () => {
    const forged = rua.replace(/^dmarc\+([0-9a-f]{32})[0-9a-f]{10}/, 'dmarc+$10000000000');
    const refused = await deliverToMx(
      server,
      { from: 'x@y.example', to: [forged] },
      fixture('google.com.eml'),
    );
    expect(refused).toMatchObject({ ok: false, code: 550 });
    const other = await server.signupConfirmed();
    const res = await server.call('GET', `/v1/domains/${domainId}/dmarc`, { key: other.project_key.key });
    expect(res.status).toBe(404);
  });
});
