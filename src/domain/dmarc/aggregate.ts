import { isIP } from 'node:net';
import { XMLParser, XMLValidator } from 'fast-xml-parser';

/**
 * DMARC aggregate reports (RFC 7489 appendix C, and DMARCbis, RFC 9990) as real reporters send
 * them: with or without the namespace, prefixed elements, missing optional fields, upper-case
 * results, several DKIM and SPF results per record, surrounding whitespace. A report that cannot
 * be read throws ReportError with the reason, which the caller keeps beside the report.
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
  const s = String(value).trim();
  return s === '' ? null : s;
};
const lower = (value: unknown) => text(value)?.toLowerCase() ?? null;
const node = (value: unknown): Node =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Node) : {};
const list = (value: unknown): Node[] =>
  (Array.isArray(value) ? value : value === undefined ? [] : [value]).map(node);

function integer(value: unknown, what: string): number {
  const s = text(value);
  if (s === null || !/^\d+$/.test(s))
    throw new ReportError(`${what} is not a whole number: ${JSON.stringify(value ?? null)}`);
  return Number(s);
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
 * element they never close: then the <feedback> element alone is read, when it is well-formed.
 */
function wellFormed(xml: string): string {
  const valid = XMLValidator.validate(xml);
  if (valid === true) return xml;
  const inner = /<(?:\w+:)?feedback[\s>][\s\S]*<\/(?:\w+:)?feedback>/.exec(xml)?.[0];
  if (inner && inner !== xml && XMLValidator.validate(inner) === true) return inner;
  throw new ReportError(`not well-formed XML: ${valid.err.msg} (line ${valid.err.line})`);
}

/** Parses one aggregate report's XML (see the file's comment). */
export function parseAggregate(xml: string): AggregateReport {
  const doc = parser.parse(wellFormed(xml)) as Node;
  if (!('feedback' in doc))
    throw new ReportError('not a DMARC aggregate report: its root element is not <feedback>');
  const feedback = node(doc.feedback);
  const meta = node(feedback.report_metadata);
  const published = node(feedback.policy_published);
  const range = node(meta.date_range);
  const orgName = text(meta.org_name);
  const reportId = text(meta.report_id);
  const domain = lower(published.domain);
  if (!orgName) throw new ReportError('report_metadata/org_name is missing');
  if (!reportId) throw new ReportError('report_metadata/report_id is missing');
  if (!domain) throw new ReportError('policy_published/domain is missing');
  const records = list(feedback.record).map(record);
  const pct = text(published.pct);
  return {
    reporter: {
      org_name: orgName,
      email: text(meta.email),
      extra_contact_info: text(meta.extra_contact_info),
    },
    report_id: reportId,
    begin: new Date(integer(range.begin, 'date_range/begin') * 1000),
    end: new Date(integer(range.end, 'date_range/end') * 1000),
    policy: {
      domain,
      adkim: lower(published.adkim),
      aspf: lower(published.aspf),
      p: lower(published.p),
      sp: lower(published.sp),
      np: lower(published.np),
      pct: pct !== null && /^\d+$/.test(pct) ? Number(pct) : null,
    },
    errors: (Array.isArray(meta.error) ? meta.error : []).map(text).filter((e): e is string => e !== null),
    records,
    total: records.reduce((n, r) => n + r.count, 0),
  };
}
