import type { Tx } from '../../db/database.ts';
import { enqueue } from '../../db/enqueue.ts';
import type { DomainContext } from '../core/context.ts';
import type { FoundReport } from './extract.ts';

/**
 * Stores what one received message carried for a domain (extract.ts): an aggregate report with
 * its records, a TLS report with its policies' results, each once per domain, reporter and report
 * id (a duplicate changes nothing); what could not be read is kept with the reason, and the
 * message's bytes once (with the first such report of the message). Rows go in chunks of
 * ROWS_PER_INSERT (PostgreSQL takes at most 65,535 parameters in one statement: a report of
 * 100,000 records is stored). Answers what each became.
 */

export type StoreOutcome = 'stored' | 'duplicate' | 'unreadable';

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
): Promise<StoreOutcome[]> {
  const outcomes: StoreOutcome[] = [];
  let rawKept = false;
  const keepUnreadable = async (file: string | null, reason: string) => {
    await ctx.db
      .insertInto('dmarc_reports')
      .values({
        domain_id: domainId,
        kind: 'unreadable',
        file: clean(file),
        reason: clean(reason),
        raw: rawKept ? null : raw,
        policy: null,
      })
      .execute();
    rawKept = true;
    outcomes.push('unreadable');
  };
  for (const item of found) {
    if (item.kind === 'unreadable') {
      await keepUnreadable(item.file, item.reason);
      continue;
    }
    try {
      outcomes.push(await ctx.db.transaction().execute((tx) => storeReport(tx, domainId, item)));
    } catch (err) {
      // what PostgreSQL refuses of a report's content (a data exception) is the report's, not ours
      const code = String((err as { code?: unknown }).code ?? '');
      if (!code.startsWith('22') && code !== '54000') throw err;
      await keepUnreadable(item.file, `it could not be stored: ${(err as Error).message}`);
    }
  }
  return outcomes;
}

/** One readable report, in the caller's transaction. */
async function storeReport(tx: Tx, domainId: string, item: Readable): Promise<StoreOutcome> {
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
  await storeFindings(tx, domainId, inserted.id, item);
  return 'stored';
}

/** `rows` in chunks of ROWS_PER_INSERT. */
async function inChunks<T>(rows: T[], insert: (chunk: T[]) => Promise<unknown>) {
  for (let at = 0; at < rows.length; at += ROWS_PER_INSERT)
    await insert(rows.slice(at, at + ROWS_PER_INSERT));
}

/**
 * What a stored report says, beside it: an aggregate report's records (and the job that judges
 * the domain's alerts for its day, committed with them), a TLS report's policies.
 */
async function storeFindings(tx: Tx, domainId: string, reportId: string, item: Readable) {
  const day = dayOfReport(item);
  if (item.kind === 'aggregate') {
    await enqueue(tx, [{ task: 'dmarc_alerts', payload: { domain_id: domainId, day } }]);
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
