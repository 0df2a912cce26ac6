import { sql } from 'kysely';
import type { Tx } from '../../db/database.ts';
import { enqueue } from '../../db/enqueue.ts';
import type { DomainContext } from '../core/context.ts';
import type { FoundReport } from './extract.ts';
import { REPORTS_PER_REPORTER_PER_DAY } from './limits.ts';

/**
 * Stores what one received message carried for a domain (extract.ts): an aggregate report with
 * its records, a TLS report with its policies' results, each once per domain, reporter and report
 * id (a duplicate changes nothing); what could not be read is kept with the reason, and the
 * message's bytes once (with the first such report of the message). Rows go in chunks of
 * ROWS_PER_INSERT (PostgreSQL takes at most 65,535 parameters in one statement: a report of
 * 100,000 records is stored). Each is kept with who sent it and whether its mail proved that
 * (only authenticated reports count toward the policy coach and the alerts), and at most
 * REPORTS_PER_REPORTER_PER_DAY of one reporter a day: past it a report is dropped (the MX still
 * answers 250). Answers what each became.
 */

export type StoreOutcome = 'stored' | 'duplicate' | 'unreadable' | 'dropped';

/** Who sent a report message: the domain of its From, and whether the mail passed DMARC for it. */
export interface ReportSender {
  domain: string | null;
  authenticated: boolean;
}

/** Records (12 parameters each) or TLS results (9) in one INSERT: 48,000 parameters at most. */
export const ROWS_PER_INSERT = 4_000;

type Readable = Exclude<FoundReport, { kind: 'unreadable' }>;

// PostgreSQL's text holds no NUL
const clean = (s: string | null) => s?.replace(/\0/g, '') ?? null;

export async function storeReports(
  ctx: Pick<DomainContext, 'db'>,
  domainId: string,
  found: FoundReport[],
  raw: Buffer,
  sender: ReportSender = { domain: null, authenticated: false },
): Promise<StoreOutcome[]> {
  const outcomes: StoreOutcome[] = [];
  let rawKept = false;
  const from = { reporter_domain: clean(sender.domain), authenticated: sender.authenticated };
  const keepUnreadable = (tx: Tx, file: string | null, reason: string) =>
    tx
      .insertInto('dmarc_reports')
      .values({
        domain_id: domainId,
        kind: 'unreadable',
        file: clean(file),
        reason: clean(reason),
        raw: rawKept ? null : raw,
        policy: null,
        ...from,
      })
      .execute()
      .then(() => {
        rawKept = true;
        return 'unreadable' as const;
      });
  const store = (item: FoundReport) =>
    ctx.db.transaction().execute(async (tx) => {
      if (await overLimit(tx, domainId, sender)) return 'dropped' as const;
      if (item.kind === 'unreadable') return keepUnreadable(tx, item.file, item.reason);
      return storeReport(tx, domainId, item, sender);
    });
  for (const item of found) {
    try {
      outcomes.push(await store(item));
    } catch (err) {
      // what PostgreSQL refuses of a report's content (a data exception) is the report's, not ours
      const code = String((err as { code?: unknown }).code ?? '');
      if (item.kind === 'unreadable' || (!code.startsWith('22') && code !== '54000')) throw err;
      const reason = `it could not be stored: ${(err as Error).message}`;
      outcomes.push(await store({ kind: 'unreadable', file: item.file, reason }));
    }
  }
  return outcomes;
}

/**
 * Whether the reporter has had its REPORTS_PER_REPORTER_PER_DAY reports for the domain kept over
 * the last 24 hours. The reporter is the domain its mail authenticated; the reports of
 * unauthenticated mail, whatever From they claim, count as one reporter. Counted under a lock of
 * the domain and reporter, so reports arriving together cannot pass it.
 */
async function overLimit(tx: Tx, domainId: string, sender: ReportSender): Promise<boolean> {
  const reporter = sender.authenticated ? (sender.domain ?? '') : null;
  await sql`select pg_advisory_xact_lock(hashtext(${`dmarc-limit:${domainId}:${reporter ?? '!'}`}))`.execute(
    tx,
  );
  const kept = await sql<{ n: number }>`
    select count(*)::int as n from dmarc_reports
     where domain_id = ${domainId} and received_at > now() - interval '24 hours'
       and ${
         reporter === null
           ? sql`not authenticated`
           : sql`authenticated and coalesce(reporter_domain, '') = ${reporter}`
}`.execute(tx);
  return kept.rows[0].n >= REPORTS_PER_REPORTER_PER_DAY;
}

/** One readable report, in the caller's transaction. */
async function storeReport(
  tx: Tx,
  domainId: string,
  item: Readable,
  sender: ReportSender,
): Promise<StoreOutcome> {
  const aggregate = item.kind === 'aggregate' ? item.report : null;
  const tls = item.kind === 'tls' ? item.report : null;
  const inserted = await tx
    .insertInto('dmarc_reports')
    .values({
      domain_id: domainId,
      kind: item.kind,
      reporter: aggregate?.reporter.org_name ?? tls?.organization_name ?? null,
      reporter_email: aggregate?.reporter.email ?? tls?.contact_info ?? null,
      report_id: aggregate?.report_id ?? tls?.report_id ?? null,
      begin_at: aggregate?.begin ?? tls?.begin ?? null,
      end_at: aggregate?.end ?? tls?.end ?? null,
      policy: aggregate ? JSON.stringify(aggregate.policy) : null,
      total: aggregate?.total ?? tls?.policies.reduce((n, p) => n + p.successful + p.failed, 0) ?? 0,
      file: clean(item.file),
      reporter_domain: clean(sender.domain),
      authenticated: sender.authenticated,
    })
    .onConflict((oc) =>
      oc
        .columns(['domain_id', 'kind', 'reporter', 'report_id'])
        .where('kind', '<>', 'unreadable')
        .doNothing(),
    )
    .returning('id')
    .executeTakeFirst();
  if (!inserted) return 'duplicate';
  await storeFindings(tx, domainId, inserted.id, item, sender.authenticated);
  return 'stored';
}

/** `rows` in chunks of ROWS_PER_INSERT. */
async function inChunks<T>(rows: T[], insert: (chunk: T[]) => Promise<unknown>) {
  for (let at = 0; at < rows.length; at += ROWS_PER_INSERT)
    await insert(rows.slice(at, at + ROWS_PER_INSERT));
}

/**
 * What a stored report says, beside it: an aggregate report's records (and, for an authenticated
 * one, the job that judges the domain's alerts for its day, committed with them), a TLS report's
 * policies.
 */
async function storeFindings(
  tx: Tx,
  domainId: string,
  reportId: string,
  item: Readable,
  authenticated: boolean,
) {
  const day = dayOfReport(item);
  if (item.kind === 'aggregate') {
    if (authenticated) await enqueue(tx, [{ task: 'dmarc_alerts', payload: { domain_id: domainId, day } }]);
    await inChunks(item.report.records, (chunk) =>
      tx
        .insertInto('dmarc_records')
        .values(
          chunk.map((r) => ({
            report_id: reportId,
            domain_id: domainId,
            day,
            source_ip: r.source_ip,
            count: r.count,
            disposition: r.disposition,
            dkim: r.dkim,
            spf: r.spf,
            aligned: r.aligned,
            header_from: r.header_from,
            envelope_from: r.envelope_from,
            auth: JSON.stringify(r.auth),
          })),
        )
        .execute(),
    );
  } else
    await inChunks(item.report.policies, (chunk) =>
      tx
        .insertInto('tls_report_results')
        .values(
          chunk.map((p) => ({
            report_id: reportId,
            domain_id: domainId,
            day,
            policy_type: p.policy_type,
            policy_domain: p.policy_domain,
            mx_host: p.mx_host,
            successful: p.successful,
            failed: p.failed,
            failures: JSON.stringify(p.failures),
          })),
        )
        .execute(),
    );
}

/** The day a report's records are counted on: the start of the period it covers. */
function dayOfReport(item: Readable): string {
  return item.report.begin.toISOString().slice(0, 10);
}
