import type { Selectable } from 'kysely';
import type { Config } from '../../config.ts';
import type { DomainRecord, DomainsTable } from '../../db/schema.ts';
import { dkimRecordValue } from './dkim-keys.ts';

/**
 * The DNS records a person publishes: those of a customer's sending domain (checked by Posthorn,
 * so TXT and MX only) and those of the shared domain (printed for the operator, who also needs
 * the MX host's address). `value` is the plain value; `zoneValue` is how to write it in a zone.
 */
export type RecordToPublish = Omit<DomainRecord, 'status'>;
export type SharedDomainRecord = Omit<RecordToPublish, 'type'> & { type: 'TXT' | 'MX' | 'A' };

/** One TXT character-string holds at most 255 bytes (RFC 1035 3.3); longer values are several. */
export const TXT_STRING_MAX = 255;

/**
 * Splits a TXT value into the character-strings of one record, each at most 255 bytes of UTF-8
 * (a character is never cut). Receivers join them with nothing in between (RFC 6376 3.6.2.2,
 * RFC 7208 3.3), so the parts concatenated are the value.
 */
export function txtChunks(value: string): string[] {
  const chunks: string[] = [];
  let current = '';
  let bytes = 0;
  for (const char of value) {
    const size = Buffer.byteLength(char);
    if (bytes + size > TXT_STRING_MAX) {
      chunks.push(current);
      current = '';
      bytes = 0;
    }
    current += char;
    bytes += size;
  }
  if (current !== '' || chunks.length === 0) chunks.push(current);
  return chunks;
}

/**
 * One character-string in zone-file presentation form: in double quotes, `"` and `\` escaped with
 * a backslash, any byte outside printable ASCII as `\DDD` (RFC 1035 5.1). The 255-byte limit counts
 * the bytes before escaping, as DNS servers do, so an escaped string may show more characters.
 */
export function quoteTxtString(chunk: string): string {
  let out = '';
  for (const byte of Buffer.from(chunk, 'utf8')) {
    if (byte === 0x22 || byte === 0x5c) out += `\\${String.fromCharCode(byte)}`;
    else if (byte >= 0x20 && byte < 0x7f) out += String.fromCharCode(byte);
    else out += `\\${byte.toString().padStart(3, '0')}`;
  }
  return `"${out}"`;
}

/**
 * A record's value as zone files and DNS providers take it: a TXT value as quoted strings of at
 * most 255 bytes each (`"v=DKIM1; k=rsa; p=MIIB..." "...rest"`), an MX as `priority host`.
 */
export function zoneValue(record: { type: string; value: string; priority?: number }): string {
  if (record.type === 'TXT') return txtChunks(record.value).map(quoteTxtString).join(' ');
  if (record.type === 'MX') return `${record.priority ?? 10} ${record.value}`;
  return record.value;
}

type DomainRow = Pick<
  Selectable<DomainsTable>,
  'name' | 'return_path' | 'dkim_selector' | 'next_dkim_selector' | 'inbound_enabled'
>;

/** The records a customer domain must publish: DKIM key, return-path SPF and MX (required), DMARC (recommended). */
export function customerDomainRecords(
  config: Pick<Config, 'spfInclude' | 'inboundHost'>,
  row: DomainRow,
  publicKeys: Map<string, string>,
  /** Where the domain's DMARC and TLS reports go (dmarc/addresses.ts); absent: its own dmarc@ address. */
  reports?: { dmarc: string; tlsrpt: string },
): RecordToPublish[] {
  const returnPath = `${row.return_path}.${row.name}`;
  const rotation: RecordToPublish[] = row.next_dkim_selector
    ? [
        {
          type: 'TXT',
          name: `${row.next_dkim_selector}._domainkey.${row.name}`,
          value: dkimRecordValue(publicKeys.get(row.next_dkim_selector) as string),
          purpose:
            'DKIM key rotation: publish this new key; Posthorn signs with it once a check finds it (keep the old record until then)',
          required: false,
        },
      ]
    : [];
  return [
    {
      type: 'TXT',
      name: `${row.dkim_selector}._domainkey.${row.name}`,
      value: dkimRecordValue(publicKeys.get(row.dkim_selector as string) as string),
      purpose: 'DKIM: the public key that verifies the signature on your mail',
      required: true,
    },
    {
      type: 'TXT',
      name: returnPath,
      value: `v=spf1 include:${config.spfInclude} ~all`,
      purpose: 'SPF for the return-path (bounce) domain, so SPF aligns with your From domain',
      required: true,
    },
    {
      type: 'MX',
      name: returnPath,
      value: config.inboundHost,
      priority: 10,
      purpose: 'Return path: bounces and complaints come back to Posthorn',
      required: true,
    },
    {
      type: 'TXT',
      name: `_dmarc.${row.name}`,
      value: `v=DMARC1; p=none; rua=mailto:${reports?.dmarc ?? `dmarc@${row.name}`}`,
      purpose: reports
        ? 'DMARC (recommended): tells receivers what to do with mail that fails, and sends their daily reports to Posthorn (GET /v1/domains/{id}/dmarc); start with p=none'
        : 'DMARC (recommended): tells receivers what to do with mail that fails; start with p=none',
      required: false,
    },
    ...(reports
      ? [
          {
            type: 'TXT' as const,
            name: `_smtp._tls.${row.name}`,
            value: `v=TLSRPTv1; rua=mailto:${reports.tlsrpt}`,
            purpose:
              'TLS reporting (recommended): receivers report failed TLS sessions to Posthorn (RFC 8460)',
            required: false,
          },
        ]
      : []),
    ...rotation,
    ...(row.inbound_enabled
      ? [
          {
            type: 'MX' as const,
            name: row.name,
            value: config.inboundHost,
            priority: 10,
            purpose: 'Inbound: mail to any address at this domain is received by Posthorn (GET /v1/inbound)',
            required: false,
          },
        ]
      : []),
  ];
}

/**
 * The records the operator publishes for the shared domain. Mail from it is signed with
 * d=<shared domain> and its return path (`bounces+...@<shared domain>`, see domain/emails/hand-over.ts) is on
 * the shared domain itself, so the domain's own SPF and MX are the bounce domain's.
 */
export function sharedDomainRecords(
  config: Pick<Config, 'sharedDomain' | 'spfInclude' | 'inboundHost' | 'inboundDomain' | 'smtpHost'>,
  dkim: { selector: string; publicBase64: string },
): SharedDomainRecord[] {
  const domain = config.sharedDomain;
  return [
    {
      type: 'TXT',
      name: `${dkim.selector}._domainkey.${domain}`,
      value: dkimRecordValue(dkim.publicBase64),
      purpose: `DKIM: the public key that verifies the signature on mail from ${domain}`,
      required: true,
    },
    {
      type: 'TXT',
      name: config.spfInclude,
      value: 'v=spf1 ip4:<your sending IPs> -all',
      purpose:
        'SPF of the sending IPs: customers include this host in their return-path SPF, and so does the record below',
      required: true,
    },
    {
      type: 'TXT',
      name: domain,
      // ~all, as on customers' return paths: a receiver's verdict comes from DMARC, not a hard SPF fail
      value: `v=spf1 include:${config.spfInclude} ~all`,
      purpose: `SPF for the bounce domain: mail from ${domain} has its return path (bounces+...@${domain}) here`,
      required: true,
    },
    {
      type: 'MX',
      name: domain,
      value: config.inboundHost,
      priority: 10,
      purpose: `Bounces and complaints: bounces+...@${domain} and the feedback loop fbl@${domain} come back to Posthorn`,
      required: true,
    },
    {
      type: 'A',
      name: config.inboundHost,
      value: '<public IPv4 address of the server running the Posthorn MX>',
      purpose: 'The MX host: where bounces, complaints and inbound mail are delivered (port 25)',
      required: true,
    },
    {
      type: 'A',
      name: config.smtpHost,
      value: '<public IPv4 address of the server running Posthorn SMTP submission>',
      purpose:
        'The submission host: the name SMTP clients connect to (ports 587 and 465) and that it greets with',
      required: false,
    },
    {
      type: 'TXT',
      name: `_dmarc.${domain}`,
      // p=none to start: the operator first checks in the aggregate reports that all mail passes
      // (it should: DKIM d= and the return path are both on this domain, so both align), then moves
      // to p=quarantine, since every tenant shares this domain's reputation. A DMARC record is what
      // Gmail and Yahoo require of bulk senders; p=none satisfies them. The reports cannot go to
      // the shared domain itself: its MX is Posthorn, which takes only bounces and complaints.
      value: 'v=DMARC1; p=none; rua=mailto:<a mailbox you read for DMARC reports>',
      purpose: `DMARC for ${domain}: receivers check that From, DKIM and SPF align; start with p=none`,
      required: true,
    },
    {
      type: 'MX',
      name: `*.${config.inboundDomain}`,
      value: config.inboundHost,
      priority: 10,
      purpose: `Inbound addresses (<anything>@<project slug>.${config.inboundDomain}), on plans with inbound mail`,
      required: false,
    },
    {
      type: 'MX',
      name: config.inboundDomain,
      value: config.inboundHost,
      priority: 10,
      purpose: `DMARC and TLS reports: each sending domain's report addresses (dmarc+...@${config.inboundDomain}, tlsrpt+...) are received by Posthorn`,
      required: false,
    },
    {
      type: 'TXT',
      name: `*._report._dmarc.${config.inboundDomain}`,
      value: 'v=DMARC1',
      purpose: `Says ${config.inboundDomain} takes DMARC reports for every sending domain (RFC 7489 7.1): without it receivers send no report to another domain`,
      required: false,
    },
  ];
}

/** The records as zone-file lines for a person, each after a comment saying what it is for. */
export function formatRecordsToPublish(records: SharedDomainRecord[]): string {
  return records
    .map(
      (r) =>
        `  ; ${r.purpose}${r.required ? '' : ' (optional)'}\n  ${r.type.padEnd(3)}  ${r.name}  ${zoneValue(r)}`,
    )
    .join('\n');
}
