import { gzipSync } from 'node:zlib';

/**
 * DMARC aggregate reports made in tests (issue 34), dated where a test needs them (the fixtures in
 * test/fixtures/dmarc are real reports of years ago), and the message a reporter sends one in.
 */

export interface MadeRecord {
  ip: string;
  count: number;
  /** DMARC's aligned verdicts, and the DKIM signature's selector (signed by the domain when given). */
  dkim: 'pass' | 'fail';
  spf: 'pass' | 'fail';
  selector?: string;
}

export function aggregateXml(options: {
  reporter: string;
  reportId: string;
  domain: string;
  day: string;
  p?: string;
  records: MadeRecord[];
}): string {
  const begin = Date.parse(`${options.day}T00:00:00Z`) / 1000;
  const records = options.records.map(
    (r) => `  <record>
    <row><source_ip>${r.ip}</source_ip><count>${r.count}</count>
      <policy_evaluated><disposition>none</disposition><dkim>${r.dkim}</dkim><spf>${r.spf}</spf></policy_evaluated></row>
    <identifiers><header_from>${options.domain}</header_from></identifiers>
    <auth_results>
      <dkim><domain>${options.domain}</domain>${r.selector ? `<selector>${r.selector}</selector>` : ''}<result>${r.dkim}</result></dkim>
      <spf><domain>${options.domain}</domain><result>${r.spf}</result></spf>
    </auth_results>
  </record>`,
  );
  return `<?xml version="1.0" encoding="UTF-8"?>
<feedback>
  <report_metadata><org_name>${options.reporter}</org_name><email>dmarc@${options.reporter}</email>
    <report_id>${options.reportId}</report_id>
    <date_range><begin>${begin}</begin><end>${begin + 86_399}</end></date_range></report_metadata>
  <policy_published><domain>${options.domain}</domain><adkim>r</adkim><aspf>r</aspf><p>${options.p ?? 'none'}</p><pct>100</pct></policy_published>
${records.join('\n')}
</feedback>
`;
}

/** The message a reporter sends: the report gzipped as its attachment, named as RFC 7489 says. */
export function reportMessage(xml: string, to: string, reporter: string, domain: string, reportId: string) {
  const file = `${reporter}!${domain}!${reportId}.xml.gz`;
  return [
    `From: dmarc@${reporter}`,
    `To: ${to}`,
    `Subject: Report domain: ${domain} Submitter: ${reporter} Report-ID: ${reportId}`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="r"',
    '',
    '--r',
    `Content-Type: application/gzip; name="${file}"`,
    'Content-Transfer-Encoding: base64',
    `Content-Disposition: attachment; filename="${file}"`,
    '',
    gzipSync(xml).toString('base64').replace(/.{76}/g, '$&\r\n'),
    '--r--',
    '',
  ].join('\r\n');
}
