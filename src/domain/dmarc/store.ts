import type { Tx } from '../../db/database.ts';
import { enqueue } from '../../db/enqueue.ts';
import type { DomainContext } from '../core/context.ts';
import type { FoundReport } from './extract.ts';

/**
 * Stores what one received message carried for a domain (extract.ts): an aggregate report with
 * its records, a TLS report with its policies' results, each once per domain, reporter and report
 * id (a duplicate changes nothing); what could not be read is kept with the reason and the
 * message's bytes. Answers what each became.
 */
export async function storeReports(
  ctx: Pick<DomainContext, 'db'>,
  domainId: string,
  found: FoundReport[],
  raw: Buffer,
): Promise<('stored' | 'duplicate' | 'unreadable')[]> {
  const outcomes: ('stored' | 'duplicate' | 'unreadable')[] = [];
  for (const item of found) {
    await ctx.db.transaction().execute(async (tx) => {
      if (item.kind === 'unreadable') {
        await tx
          .insertInto('dmarc_reports')
          .values({
            domain_id: domainId,
            kind: 'unreadable',
            file: item.file,
            reason: item.reason,
            raw,
            policy: null,
          })
          .execute();
        outcomes.push('unreadable');
        return;
      }
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
          file: item.file,
        })
        .onConflict((oc) =>
          oc
            .columns(['domain_id', 'kind', 'reporter', 'report_id'])
            .where('kind', '<>', 'unreadable')
            .doNothing(),
        )
        .returning('id')
        .executeTakeFirst();
      if (!inserted) {
        outcomes.push('duplicate');
        return;
      }
      await storeFindings(tx, domainId, inserted.id, item);
      outcomes.push('stored');
    });
  }
  return outcomes;
}

/**
 * What a stored report says, beside it: an aggregate report's records (and the job that judges
 * the domain's alerts for its day, committed with them), a TLS report's policies.
 */
async function storeFindings(
  tx: Tx,
  domainId: string,
  reportId: string,
  item: Exclude<FoundReport, { kind: 'unreadable' }>,
) {
  const day = dayOfReport(item);
  if (item.kind === 'aggregate') {
    await enqueue(tx, [{ task: 'dmarc_alerts', payload: { domain_id: domainId, day } }]);
    if (item.report.records.length > 0)
      await tx
        .insertInto('dmarc_records')
        .values(
          item.report.records.map((r) => ({
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
        .execute();
  } else if (item.report.policies.length > 0)
    await tx
      .insertInto('tls_report_results')
      .values(
        item.report.policies.map((p) => ({
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
      .execute();
}

/** The day a report's records are counted on: the start of the period it covers. */
function dayOfReport(item: FoundReport): string {
  const begin = item.kind === 'aggregate' || item.kind === 'tls' ? item.report.begin : null;
  return (begin ?? new Date()).toISOString().slice(0, 10);
}
