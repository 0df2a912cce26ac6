import { parseMail } from '../../mail/parsed.ts';
import { type AggregateReport, parseAggregate, ReportError } from './aggregate.ts';
import { parseTlsReport, type TlsReport } from './tls.ts';
import { UnpackError, unpack } from './unpack.ts';

/**
 * The reports one received message carries: each attachment (or a report sent as the body, as a
 * few reporters do) opened whatever its compression (unpack.ts), read as an aggregate report when
 * it is XML and as a TLS report when it is JSON. What cannot be read is answered with its reason,
 * never dropped.
 */

export type FoundReport =
  | { kind: 'aggregate'; report: AggregateReport; file: string | null }
  | { kind: 'tls'; report: TlsReport; file: string | null }
  | { kind: 'unreadable'; reason: string; file: string | null };

const BOM = /^\uFEFF/;

/** Reads one file: XML is an aggregate report, JSON a TLS report. */
export function readReportFile(content: Buffer, file: string | null): FoundReport[] {
  let files: { name: string | null; content: Buffer }[];
  try {
    files = unpack(content);
  } catch (err) {
    if (err instanceof UnpackError) return [{ kind: 'unreadable', reason: err.message, file }];
    throw err;
  }
  return files.map(({ name, content: bytes }) => {
    const at = name ?? file;
    const text = bytes.toString('utf8').replace(BOM, '').trim();
    try {
      if (text.startsWith('<')) return { kind: 'aggregate', report: parseAggregate(text), file: at };
      if (text.startsWith('{')) return { kind: 'tls', report: parseTlsReport(text), file: at };
      return {
        kind: 'unreadable',
        reason: 'neither XML (an aggregate report) nor JSON (a TLS report)',
        file: at,
      };
    } catch (err) {
      if (err instanceof ReportError) return { kind: 'unreadable', reason: err.message, file: at };
      throw err;
    }
  });
}

const REPORT_TYPES = /(xml|gzip|zip|json|tlsrpt|octet-stream)/i;

/** Every report in a received message (see the file's comment). */
export async function reportsInMessage(raw: Buffer): Promise<FoundReport[]> {
  const mail = await parseMail(raw, { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true });
  const attached = mail.attachments.filter(
    (a) => REPORT_TYPES.test(a.contentType) || /\.(xml|gz|zip|json)$/i.test(a.filename ?? ''),
  );
  if (attached.length > 0) return attached.flatMap((a) => readReportFile(a.content, a.filename ?? null));
  const body = (mail.text ?? '').trim();
  if (body.startsWith('<?xml') || body.startsWith('<feedback') || body.startsWith('{'))
    return readReportFile(Buffer.from(body), null);
  return [
    {
      kind: 'unreadable',
      reason: 'the message carries no report (no XML, JSON, gzip or zip attachment)',
      file: null,
    },
  ];
}
