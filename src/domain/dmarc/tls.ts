import { ReportError } from './aggregate.ts';
import { REPORT_COUNT, REPORT_LATEST_SECONDS, REPORT_ROWS } from './limits.ts';

/**
 * SMTP TLS reports (RFC 8460): JSON, as real reporters send them (field names as the RFC spells
 * them; optional fields missing; a policy string as a list of lines). What cannot be read throws
 * ReportError with the reason: counts are whole numbers up to REPORT_COUNT, policies and failure
 * details REPORT_ROWS in all, dates within the years 1970 to 9999.
 */

export interface TlsFailure {
  result_type: string;
  sending_mta_ip: string | null;
  receiving_mx_hostname: string | null;
  receiving_ip: string | null;
  failed_session_count: number;
  failure_reason_code: string | null;
}

export interface TlsPolicyResult {
  policy_type: string;
  policy_domain: string;
  mx_host: string | null;
  successful: number;
  failed: number;
  failures: TlsFailure[];
}

export interface TlsReport {
  organization_name: string;
  report_id: string;
  contact_info: string | null;
  begin: Date;
  end: Date;
  policies: TlsPolicyResult[];
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});
// PostgreSQL's text and jsonb hold no NUL (JSON's \u0000 makes one)
const str = (v: unknown): string | null => {
  const s = typeof v === 'string' ? v.replace(/\0/g, '').trim() : '';
  return s === '' ? null : s;
};
const shown = (v: unknown) => String(JSON.stringify(v) ?? null).slice(0, 100);
const count = (v: unknown, what: string): number => {
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > REPORT_COUNT)
    throw new ReportError(`${what} is not a count (a whole number up to ${REPORT_COUNT}): ${shown(v)}`);
  return v;
};
const date = (v: unknown, what: string): Date => {
  const d = typeof v === 'string' ? new Date(v) : new Date(Number.NaN);
  const t = d.getTime();
  if (Number.isNaN(t) || t < 0 || t > REPORT_LATEST_SECONDS * 1000)
    throw new ReportError(`${what} is not a date: ${shown(v ?? null)}`);
  return d;
};

/** Parses one TLS report's JSON. */
export function parseTlsReport(json: string): TlsReport {
  let doc: Obj;
  try {
    doc = obj(JSON.parse(json));
  } catch (err) {
    throw new ReportError(`not JSON: ${(err as Error).message}`);
  }
  const organization = str(doc['organization-name']);
  const reportId = str(doc['report-id']);
  if (!organization) throw new ReportError('organization-name is missing');
  if (!reportId) throw new ReportError('report-id is missing');
  if (!Array.isArray(doc.policies)) throw new ReportError('policies is missing');
  const rows = doc.policies.reduce((n: number, p) => {
    const details = obj(p)['failure-details'];
    return n + 1 + (Array.isArray(details) ? details.length : 0);
  }, 0);
  if (rows > REPORT_ROWS)
    throw new ReportError(`the report holds more than ${REPORT_ROWS} policies and failure details`);
  const range = obj(doc['date-range']);
  return {
    organization_name: organization,
    report_id: reportId,
    contact_info: str(doc['contact-info']),
    begin: date(range['start-datetime'], 'date-range/start-datetime'),
    end: date(range['end-datetime'], 'date-range/end-datetime'),
    policies: doc.policies.map((entry, i) => {
      const at = `policies[${i}]`;
      const policy = obj(obj(entry).policy);
      const summary = obj(obj(entry).summary);
      const domain = str(policy['policy-domain'])?.toLowerCase();
      if (!domain) throw new ReportError(`${at}: policy-domain is missing`);
      const details = obj(entry)['failure-details'];
      return {
        policy_type: str(policy['policy-type'])?.toLowerCase() ?? 'no-policy-found',
        policy_domain: domain,
        mx_host: str(policy['mx-host']),
        successful: count(summary['total-successful-session-count'], `${at}: total-successful-session-count`),
        failed: count(summary['total-failure-session-count'], `${at}: total-failure-session-count`),
        failures: (Array.isArray(details) ? details : []).map((d, j) => {
          const f = obj(d);
          return {
            result_type: str(f['result-type'])?.toLowerCase() ?? 'unknown',
            sending_mta_ip: str(f['sending-mta-ip']),
            receiving_mx_hostname: str(f['receiving-mx-hostname'])?.toLowerCase() ?? null,
            receiving_ip: str(f['receiving-ip']),
            failed_session_count: count(
              f['failed-session-count'],
              `${at}: failure-details[${j}]: failed-session-count`,
            ),
            failure_reason_code: str(f['failure-reason-code']),
          };
        }),
      };
    }),
  };
}
