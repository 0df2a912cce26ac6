import { parseMail } from '../../mail/parsed.ts';
import { type AggregateReport, parseAggregate, ReportError } from './aggregate.ts';
import { parseTlsReport, type TlsReport } from './tls.ts';
import { Budget, OverBudget, UnpackError, unpack } from './unpack.ts';

/**
 * The reports one received message carries: each attachment (or a report sent as the body, as a
 * few reporters do) opened whatever its compression (unpack.ts), read as an aggregate report when
 * it is XML and as a TLS report when it is JSON. What cannot be read is answered with its reason,
 * never dropped and never thrown: whatever a file holds, reading it ends in a report or a reason.
 * All of a message's files share one budget (limits.ts); past it the whole message is one
 * unreadable report. Runs in the report thread (read.ts).
 */

export type FoundReport =
  | { kind: 'aggregate'; report: AggregateReport; file: string | null }
  | { kind: 'tls'; report: TlsReport; file: string | null }
  | { kind: 'unreadable'; reason: string; file: string | null };

/** What a message carried, and the address in its From (which names a reporter that gives no name). */
export interface ReadMessage {
  from: string | null;
  reports: FoundReport[];
}

/** The first byte that is not a byte order mark or white space: `<` for XML, `{` for JSON. */
function firstByte(bytes: Buffer): number | undefined {
  let at = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  while (at < bytes.length && [0x20, 0x09, 0x0a, 0x0d].includes(bytes[at])) at++;
  return bytes[at];
}

/** One file, opened: XML is an aggregate report, JSON a TLS report (read as text only then). */
function readOne(bytes: Buffer, file: string | null, from: string | null): FoundReport {
  const first = firstByte(bytes);
  if (first !== 0x3c && first !== 0x7b)
    return { kind: 'unreadable', reason: 'neither XML (an aggregate report) nor JSON (a TLS report)', file };
  const text = bytes
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .trim();
  try {
    if (first === 0x3c) return { kind: 'aggregate', report: parseAggregate(text, from), file };
    return { kind: 'tls', report: parseTlsReport(text), file };
  } catch (err) {
    const reason =
      err instanceof ReportError ? err.message : `it could not be read: ${(err as Error).message}`;
    return { kind: 'unreadable', reason, file };
  }
}

/** Reads one file within the message's budget; OverBudget goes to the message (readMessage). */
function readFile(content: Buffer, file: string | null, budget: Budget, from: string | null) {
  let files: { name: string | null; content: Buffer }[];
  try {
    files = unpack(content, budget);
  } catch (err) {
    if (err instanceof OverBudget || !(err instanceof UnpackError)) throw err;
    return [{ kind: 'unreadable' as const, reason: err.message, file }];
  }
  const found: FoundReport[] = [];
  // each file read and let go before the next: a message holds one file's text at a time
  while (files.length > 0) {
    const next = files.shift() as { name: string | null; content: Buffer };
    found.push(readOne(next.content, next.name ?? file, from));
  }
  return found;
}

/** Reads one file (a file of its own: a budget of its own). */
export function readReportFile(
  content: Buffer,
  file: string | null,
  from: string | null = null,
): FoundReport[] {
  try {
    return readFile(content, file, new Budget(), from);
  } catch (err) {
    return [{ kind: 'unreadable', reason: (err as Error).message, file }];
  }
}

const REPORT_TYPES = /(xml|gzip|zip|json|tlsrpt|octet-stream)/i;

/** Every report in a received message, and its From (see the file's comment). */
export async function readMessage(raw: Buffer): Promise<ReadMessage> {
  const mail = await parseMail(raw, { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true });
  const from = mail.from?.value[0]?.address?.replace(/\0/g, '').toLowerCase() || null;
  const attached = mail.attachments.filter(
    (a) => REPORT_TYPES.test(a.contentType) || /\.(xml|gz|zip|json)$/i.test(a.filename ?? ''),
  );
  const budget = new Budget();
  const reports: FoundReport[] = [];
  try {
    if (attached.length > 0)
      for (const a of attached) reports.push(...readFile(a.content, a.filename ?? null, budget, from));
    else {
      const body = (mail.text ?? '').trim();
      if (body.startsWith('<?xml') || body.startsWith('<feedback') || body.startsWith('{'))
        reports.push(...readFile(Buffer.from(body), null, budget, from));
    }
  } catch (err) {
    if (!(err instanceof OverBudget)) throw err;
    // nothing of a message past its budget is kept but the reason (and its bytes)
    return { from, reports: [{ kind: 'unreadable', reason: err.message, file: null }] };
  }
  if (reports.length > 0) return { from, reports };
  const reason = 'the message carries no report (no XML, JSON, gzip or zip attachment)';
  return { from, reports: [{ kind: 'unreadable', reason, file: null }] };
}

/** Every report in a received message. */
export async function reportsInMessage(raw: Buffer): Promise<FoundReport[]> {
  return (await readMessage(raw)).reports;
}
