import { isIP } from 'node:net';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { REPORT_COUNT, REPORT_LATEST_SECONDS, REPORT_ROWS } from './limits.ts';

/**
 * DMARC aggregate reports (RFC 7489 appendix C, and DMARCbis, RFC 9990) as real reporters send
 * them: with or without the namespace, prefixed elements, missing optional fields, upper-case
 * results, several DKIM and SPF results per record, surrounding whitespace, an empty org_name
 * (named by the reporter's address instead). A report that cannot be read throws ReportError with
 * the reason, which the caller keeps beside the report: one that declares a DOCTYPE (entities,
 * external references), nests too deeply, holds more than REPORT_ROWS records or a count past
 * REPORT_COUNT. Records are read one by one, so a large report costs memory for its records only.
 */

export class ReportError extends Error {}

export interface AggregateRecord {
  source_ip: string;
  count: number;
  /** policy_evaluated: what the receiver did, and DMARC's own DKIM and SPF verdicts (aligned). */
  disposition: string | null;
  dkim: string | null;
  spf: string | null;
  reasons: { type: string; comment: string | null }[];
  header_from: string | null;
  envelope_from: string | null;
  envelope_to: string | null;
  auth: {
    dkim: { domain: string | null; selector: string | null; result: string | null }[];
    spf: { domain: string | null; scope: string | null; result: string | null }[];
  };
  /** DMARC passed for these messages: DKIM or SPF passed aligned. */
  aligned: boolean;
}

export interface AggregateReport {
  reporter: { org_name: string; email: string | null; extra_contact_info: string | null };
  report_id: string;
  begin: Date;
  end: Date;
  policy: {
    domain: string;
    adkim: string | null;
    aspf: string | null;
    p: string | null;
    sp: string | null;
    np: string | null;
    pct: number | null;
  };
  /** report_metadata/error: what the reporter says went wrong. */
  errors: string[];
  records: AggregateRecord[];
  /** Messages in all (the sum of the records' counts). */
  total: number;
}

type Node = Record<string, unknown>;

const parser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  parseTagValue: false,
  trimValues: true,
  isArray: (name) => ['record', 'dkim', 'spf', 'reason', 'error'].includes(name),
});

const text = (value: unknown): string | null => {
  // an element read as a list (dkim and spf are lists in auth_results) that holds one value
  if (Array.isArray(value)) return text(value[0]);
  if (value === undefined || value === null) return null;
  if (typeof value === 'object') return null;
  // PostgreSQL's text holds no NUL (a character reference may make one)
  const s = String(value).replace(/\0/g, '').trim();
  return s === '' ? null : s;
};
const lower = (value: unknown) => text(value)?.toLowerCase() ?? null;
const node = (value: unknown): Node =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Node) : {};
const list = (value: unknown): Node[] =>
  (Array.isArray(value) ? value : value === undefined ? [] : [value]).map(node);

/** A whole number up to `max` (a count, a moment): anything else is not a report's. */
function integer(value: unknown, what: string, max = REPORT_COUNT): number {
  const s = text(value);
  if (s === null || !/^\d+$/.test(s))
    throw new ReportError(`${what} is not a whole number: ${JSON.stringify(value ?? null).slice(0, 100)}`);
  const n = Number(s);
  if (n > max)
    throw new ReportError(`${what} is ${s.length > 20 ? `${s.slice(0, 20)}...` : s}, more than ${max}`);
  return n;
}

function record(r: Node, i: number): AggregateRecord {
  const row = node(r.row);
  const evaluated = node(row.policy_evaluated);
  const identifiers = node(r.identifiers);
  const auth = node(r.auth_results);
  const sourceIp = text(row.source_ip);
  if (!sourceIp || isIP(sourceIp) === 0)
    throw new ReportError(
      `record ${i + 1}: source_ip is not an IP address: ${JSON.stringify(row.source_ip ?? null)}`,
    );
  const dkim = lower(evaluated.dkim);
  const spf = lower(evaluated.spf);
  return {
    source_ip: sourceIp,
    count: integer(row.count, `record ${i + 1}: count`),
    disposition: lower(evaluated.disposition),
    dkim,
    spf,
    reasons: list(evaluated.reason)
      .map((reason) => ({ type: lower(reason.type) ?? '', comment: text(reason.comment) }))
      .filter((reason) => reason.type !== ''),
    header_from: lower(identifiers.header_from),
    envelope_from: lower(identifiers.envelope_from),
    envelope_to: lower(identifiers.envelope_to),
    auth: {
      dkim: list(auth.dkim).map((d) => ({
        domain: lower(d.domain),
        selector: text(d.selector),
        result: lower(d.result),
      })),
      spf: list(auth.spf).map((s) => ({
        domain: lower(s.domain),
        scope: lower(s.scope),
        result: lower(s.result),
      })),
    },
    aligned: dkim === 'pass' || spf === 'pass',
  };
}

/**
 * The report's XML, checked to be well-formed. Some reporters (IKEA's) wrap <feedback> in an
 * element they never close: then the <feedback> element alone is read, when it is well-formed. A
 * DOCTYPE is refused before anything is parsed: no report needs one, and its entities are how XXE
 * and entity expansion come in.
 */
function wellFormed(xml: string): string {
  if (/<!DOCTYPE/i.test(xml))
    throw new ReportError('the XML declares a DOCTYPE: its entities and external references are not read');
  const valid = XMLValidator.validate(xml);
  if (valid === true) return xml;
  const inner = /<(?:\w+:)?feedback[\s>][\s\S]*<\/(?:\w+:)?feedback>/.exec(xml)?.[0];
  if (inner && inner !== xml && XMLValidator.validate(inner) === true) return inner;
  throw new ReportError(`not well-formed XML: ${valid.err.msg} (line ${valid.err.line})`);
}

/** Parses XML, whatever the parser throws (nesting past its limit, a stack overflow) a ReportError. */
function parsed(xml: string): Node {
  try {
    return parser.parse(xml) as Node;
  } catch (err) {
    throw new ReportError(`the XML could not be read: ${(err as Error).message}`);
  }
}

const RECORD_START = /<(?:[A-Za-z_][\w.-]*:)?record(?=[\s>/])[^>]*>/g;
const RECORD_END = /<\/(?:[A-Za-z_][\w.-]*:)?record\s*>/g;

/**
 * The report's records, each parsed on its own (a report of 100,000 records is never one tree in
 * memory), and the rest of the document without them.
 */
function splitRecords(xml: string): { rest: string; records: AggregateRecord[] } {
  const records: AggregateRecord[] = [];
  const rest: string[] = [];
  let from = 0;
  RECORD_START.lastIndex = 0;
  for (let start = RECORD_START.exec(xml); start; start = RECORD_START.exec(xml)) {
    if (records.length >= REPORT_ROWS)
      throw new ReportError(`the report holds more than ${REPORT_ROWS} records`);
    let end = start.index + start[0].length;
    if (!start[0].endsWith('/>')) {
      RECORD_END.lastIndex = end;
      const close = RECORD_END.exec(xml);
      if (!close) throw new ReportError(`record ${records.length + 1} is never closed`);
      end = close.index + close[0].length;
    }
    rest.push(xml.slice(from, start.index));
    from = end;
    RECORD_START.lastIndex = end;
    const [one] = list(parsed(xml.slice(start.index, end)).record);
    records.push(record(one ?? {}, records.length));
  }
  rest.push(xml.slice(from));
  return { rest: rest.join(''), records };
}

/** A date range's end, as seconds since 1970 within the years a report can name. */
const moment = (value: unknown, what: string) => new Date(integer(value, what, REPORT_LATEST_SECONDS) * 1000);

/**
 * Parses one aggregate report's XML (see the file's comment). `reporterAddress` (the From of the
 * mail it came in) names a report whose org_name is empty, as some reporters send it.
 */
export function parseAggregate(xml: string, reporterAddress: string | null = null): AggregateReport {
  const { rest, records } = splitRecords(wellFormed(xml));
  const doc = parsed(rest);
  if (!('feedback' in doc))
    throw new ReportError('not a DMARC aggregate report: its root element is not <feedback>');
  const feedback = node(doc.feedback);
  const meta = node(feedback.report_metadata);
  const published = node(feedback.policy_published);
  const range = node(meta.date_range);
  const orgName = text(meta.org_name) ?? reporterAddress?.toLowerCase() ?? text(meta.email);
  const reportId = text(meta.report_id);
  const domain = lower(published.domain);
  if (!orgName)
    throw new ReportError('report_metadata/org_name is missing, and no address names the reporter');
  if (!reportId) throw new ReportError('report_metadata/report_id is missing');
  if (!domain) throw new ReportError('policy_published/domain is missing');
  const pct = text(published.pct);
  return {
    reporter: {
      org_name: orgName,
      email: text(meta.email),
      extra_contact_info: text(meta.extra_contact_info),
    },
    report_id: reportId,
    begin: moment(range.begin, 'date_range/begin'),
    end: moment(range.end, 'date_range/end'),
    policy: {
      domain,
      adkim: lower(published.adkim),
      aspf: lower(published.aspf),
      p: lower(published.p),
      sp: lower(published.sp),
      np: lower(published.np),
      pct: pct !== null && /^\d{1,3}$/.test(pct) ? Number(pct) : null,
    },
    errors: (Array.isArray(meta.error) ? meta.error : []).map(text).filter((e): e is string => e !== null),
    records,
    total: records.reduce((n, r) => n + r.count, 0),
  };
}
