import { deflateRawSync, gzipSync } from 'node:zlib';

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

/**
 * A zip bomb as the issue found it (issue 47): one deflated member of `bytes` zeros (49 MB make
 * ~48 KB) and a central directory of `entries` entries that all point at it, each declaring a
 * size of 1,000 bytes, so a reader that trusts the declared sizes inflates it `entries` times.
 */
export function zipBomb(bytes: number, entries: number): Buffer {
  const data = deflateRawSync(Buffer.alloc(bytes), { level: 9 });
  const name = (i: number) => Buffer.from(`report-${i}.xml`);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt16LE(8, 8); // deflate
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(1_000, 22);
  local.writeUInt16LE(name(1).length, 26);
  const head = Buffer.concat([local, name(1), data]);
  const directory = Array.from({ length: entries }, (_, i) => {
    const entry = Buffer.alloc(46);
    entry.writeUInt32LE(0x02014b50, 0);
    entry.writeUInt16LE(20, 4);
    entry.writeUInt16LE(20, 6);
    entry.writeUInt16LE(8, 10);
    entry.writeUInt32LE(data.length, 20);
    entry.writeUInt32LE(1_000, 24);
    entry.writeUInt16LE(name(i + 1).length, 28);
    entry.writeUInt32LE(0, 42); // every entry's local header: the one member
    return Buffer.concat([entry, name(i + 1)]);
  });
  const central = Buffer.concat(directory);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries, 8);
  end.writeUInt16LE(entries, 10);
  end.writeUInt32LE(central.length, 12);
  end.writeUInt32LE(head.length, 16);
  return Buffer.concat([head, central, end]);
}

/** A report message with these files attached (base64), as `application/gzip` or `application/zip`. */
export function messageWith(to: string, from: string, files: { name: string; content: Buffer }[]): string {
  const parts = files.flatMap(({ name, content }) => [
    '--r',
    `Content-Type: application/${name.endsWith('.zip') ? 'zip' : 'gzip'}; name="${name}"`,
    'Content-Transfer-Encoding: base64',
    `Content-Disposition: attachment; filename="${name}"`,
    '',
    content.toString('base64').replace(/.{76}/g, '$&\r\n'),
  ]);
  return [
    `From: ${from}`,
    `To: ${to}`,
    'Subject: Report domain: bombed.example',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="r"',
    '',
    ...parts,
    '--r--',
    '',
  ].join('\r\n');
}
