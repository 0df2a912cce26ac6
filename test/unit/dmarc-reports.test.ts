import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { parseAggregate } from '../../src/domain/dmarc/aggregate.ts';
import { type FoundReport, readReportFile, reportsInMessage } from '../../src/domain/dmarc/extract.ts';
import { unpack } from '../../src/domain/dmarc/unpack.ts';

/**
 * DMARC aggregate and SMTP TLS reports as large reporters send them (issue 34, item 2): real
 * reports from the sample sets of open-source DMARC parsers (test/fixtures/dmarc/README.md), as
 * plain XML, gzip, zip and whole messages with their attachment. Each report's totals are checked
 * against the counts in its own XML, read here with a regular expression, not the parser.
 */

const FIXTURES = path.join(import.meta.dirname, '..', 'fixtures', 'dmarc');
const fixture = (name: string) => readFileSync(path.join(FIXTURES, name));

/** The messages and records an aggregate report's XML holds, read without the parser. */
function countsIn(xml: string) {
  const total = [...xml.matchAll(/<count>\s*(\d+)\s*<\/count>/g)].reduce((n, m) => n + Number(m[1]), 0);
  return { total, records: [...xml.matchAll(/<(?:\w+:)?record>/g)].length };
}

const aggregateOf = (found: FoundReport[]) => {
  expect(found.map((f) => f.kind)).toEqual(['aggregate']);
  return (found[0] as Extract<FoundReport, { kind: 'aggregate' }>).report;
};

describe('aggregate reports, plain XML', () => {
  it.each([
    ['outlook.com.xml', 'Outlook.com'],
    ['ikea.com.xml', 'ikea.com'],
    ['veeam.com.xml', 'veeam.com'],
    ['usssa.com.xml', 'usssa.com'],
    ['addisonfoods.com.xml', 'addisonfoods.com'],
    ['dmarcbis.xml', 'Sample Reporter'],
    ['empty-reason.xml', 'example.org'],
    ['yahoo.com.xml', 'Yahoo'],
    ['aol.com.xml', 'AOL'],
    ['web.de.xml', 'WEB.DE'],
    ['gmx.net.xml', 'GMX'],
    ['mail.ru.xml', 'Mail.Ru'],
  ])('%s (%s): parsed, its totals those of its XML', (file, reporter) => {
    const xml = fixture(file).toString('utf8');
    const report = aggregateOf(readReportFile(fixture(file), file));
    const expected = countsIn(xml);
    expect(report.reporter.org_name).toBe(reporter);
    expect(report.total).toBe(expected.total);
    expect(report.records).toHaveLength(expected.records);
    expect(report.report_id).toBeTruthy();
    expect(report.policy.domain).toMatch(/\./);
    expect(report.end.getTime()).toBeGreaterThan(report.begin.getTime());
  });

  it("reads Microsoft's report in full: source, verdicts, identifiers and each result", () => {
    const report = parseAggregate(fixture('outlook.com.xml').toString('utf8'));
    expect(report.reporter).toMatchObject({ org_name: 'Outlook.com', email: 'dmarcreport@microsoft.com' });
    expect(report.records[0]).toMatchObject({ count: 1, header_from: expect.any(String) });
    expect(report.records[0].auth.spf.length + report.records[0].auth.dkim.length).toBeGreaterThan(0);
  });

  it('reads the DMARCbis format with its namespace, and several records of one source', () => {
    const report = parseAggregate(fixture('dmarcbis.xml').toString('utf8'));
    expect(report.policy).toMatchObject({ domain: 'example.com', p: 'quarantine', sp: 'none', np: 'none' });
    expect(report.records[0]).toMatchObject({
      source_ip: '192.0.2.123',
      count: 123,
      disposition: 'pass',
      dkim: 'pass',
      spf: 'fail',
      aligned: true,
    });
    const two = parseAggregate(fixture('usssa.com.xml').toString('utf8'));
    expect(two.records).toHaveLength(2);
  });

  it('keeps an empty <reason> out of the reasons, the record still read', () => {
    const report = parseAggregate(fixture('empty-reason.xml').toString('utf8'));
    expect(report.total).toBe(2);
    expect(report.records[0].reasons.every((r) => r.type !== '')).toBe(true);
  });

  it('refuses malformed XML with the reason', () => {
    const [found] = readReportFile(fixture('invalid.xml'), 'invalid.xml');
    expect(found).toMatchObject({ kind: 'unreadable', file: 'invalid.xml' });
    expect((found as { reason: string }).reason).toMatch(/^not well-formed XML: .* \(line \d+\)$/);
  });
});

describe('aggregate reports, compressed', () => {
  it("opens Fastmail's gzip: totals those of the XML inside", () => {
    const xml = gunzipSync(fixture('fastmail.com.xml.gz')).toString('utf8');
    const report = aggregateOf(readReportFile(fixture('fastmail.com.xml.gz'), 'fastmail.com.xml.gz'));
    expect(report.reporter.org_name).toBe('FastMail Pty Ltd');
    expect(report.total).toBe(countsIn(xml).total);
  });

  it('opens a zip (deflated), naming the file inside', () => {
    const files = unpack(fixture('infonacot.gob.mx.xml.zip'));
    expect(files.map((f) => f.name)).toEqual([
      'estadocuenta1.infonacot.gob.mx!example.com!1536853302!1536939702!2940.xml',
    ]);
    const report = aggregateOf(
      readReportFile(fixture('infonacot.gob.mx.xml.zip'), 'infonacot.gob.mx.xml.zip'),
    );
    expect(report).toMatchObject({
      report_id: '2940',
      total: countsIn(files[0].content.toString('utf8')).total,
    });
  });

  it('refuses a damaged zip or gzip with the reason', () => {
    const zip = fixture('infonacot.gob.mx.xml.zip');
    const [cut] = readReportFile(zip.subarray(0, zip.length - 30), 'cut.zip');
    expect(cut).toMatchObject({ kind: 'unreadable', reason: expect.stringMatching(/zip/) });
    const gz = fixture('fastmail.com.xml.gz');
    const [broken] = readReportFile(Buffer.concat([gz.subarray(0, 20), Buffer.alloc(40)]), 'broken.gz');
    expect(broken).toMatchObject({
      kind: 'unreadable',
      reason: expect.stringMatching(/^the gzip data could not be read/),
    });
  });
});

describe('reports in the messages reporters send', () => {
  it.each([
    ['google.com.eml', 'google.com', '949348866075514174'],
    ['twilight.eml', 'google.com', '1627703331531660819'],
    ['mimecast.eml', 'Mimecast', '157a5fe30ec76f4bc0d8bccfc96c118a167a1280fee7c7465af5115e73082e5e'],
  ])('%s: the attachment found and read (%s, report %s)', async (file, reporter, id) => {
    const report = aggregateOf(await reportsInMessage(fixture(file)));
    expect(report.reporter.org_name).toBe(reporter);
    expect(report.report_id).toBe(id);
    expect(report.total).toBe(1);
  });

  it("reads Google's SMTP TLS report (a gzipped JSON attachment)", async () => {
    const [found] = await reportsInMessage(fixture('tls-google.com.eml'));
    expect(found.kind).toBe('tls');
    const report = (found as Extract<FoundReport, { kind: 'tls' }>).report;
    expect(report.organization_name).toBe('Google Inc.');
    expect(report.policies).toEqual([
      expect.objectContaining({
        policy_domain: 'cardinalhealth.ca',
        successful: 48,
        failed: 0,
        failures: [],
      }),
    ]);
  });

  it('says why a message without a report is kept', async () => {
    const found = await reportsInMessage(
      Buffer.from('From: a@b.example\r\nSubject: hello\r\n\r\nJust a note.\r\n'),
    );
    expect(found).toEqual([
      {
        kind: 'unreadable',
        reason: 'the message carries no report (no XML, JSON, gzip or zip attachment)',
        file: null,
      },
    ]);
  });
});

describe('SMTP TLS reports', () => {
  it.each([
    ['tls-rfc8460.json', 'Company-X', 'company-y.example', 5326, 303, 3],
    ['tls-mail.ru.json', 'Mail.ru', 'example.com', 0, 1, 2],
    ['tls-example.json', 'Example Inc.', 'example.com', 0, 3, 2],
    ['tls-microsoft.com.json', 'Microsoft Corporation', 'random.net', 2, 0, 0],
  ])('%s (%s): each policy with its sessions and failures', (file, org, domain, ok, failed, details) => {
    const [found] = readReportFile(fixture(file), file);
    expect(found.kind).toBe('tls');
    const report = (found as Extract<FoundReport, { kind: 'tls' }>).report;
    expect(report.organization_name).toBe(org);
    expect(report.policies[0]).toMatchObject({ policy_domain: domain, successful: ok, failed });
    expect(report.policies[0].failures).toHaveLength(details);
  });

  it("reads the RFC's failure details: type, addresses, host and count", () => {
    const [found] = readReportFile(fixture('tls-rfc8460.json'), null);
    const failures = (found as Extract<FoundReport, { kind: 'tls' }>).report.policies[0].failures;
    expect(failures.map((f) => [f.result_type, f.failed_session_count])).toEqual([
      ['certificate-expired', 100],
      ['starttls-not-supported', 200],
      ['validation-failure', 3],
    ]);
    expect(failures[2]).toMatchObject({
      receiving_mx_hostname: 'mx-backup.mail.company-y.example',
      failure_reason_code: 'X509_V_ERR_PROXY_PATH_LENGTH_EXCEEDED',
    });
  });
});

describe('what each reporter adds', () => {
  it("reads Yahoo's report with its trailing tabs, and Microsoft's TLS report with an STS and a TLSA policy", () => {
    const yahoo = parseAggregate(fixture('yahoo.com.xml').toString('utf8'));
    expect(yahoo).toMatchObject({ report_id: '1709600619.487850', total: 1 });
    expect(yahoo.policy).toMatchObject({ domain: 'random.org', p: 'reject' });
    expect(yahoo.records[0]).toMatchObject({
      source_ip: '1.2.3.4',
      dkim: 'pass',
      spf: 'pass',
      aligned: true,
    });
    const [found] = readReportFile(fixture('tls-microsoft.com.json'), null);
    const tls = (found as Extract<FoundReport, { kind: 'tls' }>).report;
    expect(tls.policies.map((p) => [p.policy_type, p.successful])).toEqual([
      ['sts', 2],
      ['tlsa', 2],
    ]);
  });
});
