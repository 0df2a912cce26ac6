import { sql } from 'kysely';
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
      const day = (aggregate?.begin ?? tls?.begin ?? new Date()).toISOString().slice(0, 10);
      if (aggregate && aggregate.records.length > 0)
        await tx
          .insertInto('dmarc_records')
          .values(
            aggregate.records.map((r) => ({
              report_id: inserted.id,
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
      if (tls && tls.policies.length > 0)
        await tx
          .insertInto('tls_report_results')
          .values(
            tls.policies.map((p) => ({
              report_id: inserted.id,
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
      outcomes.push('stored');
    });
  }
  return outcomes;
}

/** GET /domains/{id}/dmarc: what the domain's reports say (see routes/domains.ts for the shape). */
export async function dmarcOverview(ctx: Pick<DomainContext, 'db'>, domainId: string) {
  const totals = await sql<{ messages: number; aligned: number; reports: number }>`
    select coalesce(sum(count), 0)::bigint as messages,
           coalesce(sum(count) filter (where aligned), 0)::bigint as aligned,
           count(distinct report_id)::int as reports
      from dmarc_records where domain_id = ${domainId}`.execute(ctx.db);
  const sources = await sql<{ source_ip: string; messages: number; aligned: number; reporters: number }>`
    select r.source_ip, sum(r.count)::bigint as messages,
           coalesce(sum(r.count) filter (where r.aligned), 0)::bigint as aligned,
           count(distinct d.reporter)::int as reporters
      from dmarc_records r join dmarc_reports d on d.id = r.report_id
     where r.domain_id = ${domainId}
     group by r.source_ip order by messages desc limit 200`.execute(ctx.db);
  const reports = await ctx.db
    .selectFrom('dmarc_reports')
    .select([
      'id',
      'kind',
      'reporter',
      'reporter_email',
      'report_id',
      'begin_at',
      'end_at',
      'total',
      'file',
      'reason',
      'received_at',
    ])
    .where('domain_id', '=', domainId)
    .orderBy('received_at', 'desc')
    .limit(100)
    .execute();
  const tls = await sql<{ policy_domain: string; successful: number; failed: number }>`
    select policy_domain, sum(successful)::bigint as successful, sum(failed)::bigint as failed
      from tls_report_results where domain_id = ${domainId} group by policy_domain order by policy_domain`.execute(
    ctx.db,
  );
  const t = totals.rows[0];
  const messages = Number(t.messages);
  return {
    object: 'domain_dmarc' as const,
    summary: {
      messages,
      aligned: Number(t.aligned),
      aligned_rate: messages === 0 ? null : Number(t.aligned) / messages,
      reports: t.reports,
    },
    sources: sources.rows.map((s) => ({
      source_ip: s.source_ip,
      messages: Number(s.messages),
      aligned: Number(s.aligned),
      reporters: s.reporters,
    })),
    tls: tls.rows.map((r) => ({
      policy_domain: r.policy_domain,
      successful: Number(r.successful),
      failed: Number(r.failed),
    })),
    reports: reports.map((r) => ({
      id: r.id,
      kind: r.kind,
      reporter: r.reporter,
      reporter_email: r.reporter_email,
      report_id: r.report_id,
      begin: r.begin_at?.toISOString() ?? null,
      end: r.end_at?.toISOString() ?? null,
      messages: Number(r.total),
      file: r.file,
      reason: r.reason,
      received_at: r.received_at.toISOString(),
    })),
  };
}
