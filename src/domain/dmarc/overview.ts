import { type Selectable, sql } from 'kysely';
import type { DomainsTable } from '../../db/schema.ts';
import { addDays, dayOf, daysBetween, now } from '../core/clock.ts';
import type { DomainContext } from '../core/context.ts';
import { reportAddress } from './addresses.ts';
import { COACH_DAYS, coach } from './coach.ts';
import { classify, type Known, knownSources, type SourceKind, signedByPosthorn } from './sources.ts';

type Domain = Selectable<DomainsTable>;
type Ctx = Pick<DomainContext, 'db' | 'config' | 'secrets'>;

interface SourceRow {
  source_ip: string;
  messages: number;
  aligned: number;
  reporters: number;
  signed: boolean;
  first_day: string;
  last_day: string;
}

/**
 * Each source's messages over `from`…`to` (the newest days of reports), with who sent them: of
 * authenticated reports only (their mail passed DMARC for the reporter), as everything the coach,
 * the alerts and the charts count.
 */
export async function sourcesOver(
  ctx: Pick<DomainContext, 'db'>,
  domain: Domain,
  known: Known,
  from: string,
  to: string,
) {
  const rows = await sql<SourceRow>`
    select r.source_ip, sum(r.count)::bigint as messages,
           coalesce(sum(r.count) filter (where r.aligned), 0)::bigint as aligned,
           count(distinct d.reporter)::int as reporters,
           bool_or(${signedByPosthorn(domain.name, known)}) as signed,
           min(r.day)::text as first_day, max(r.day)::text as last_day
      from dmarc_records r join dmarc_reports d on d.id = r.report_id
     where r.domain_id = ${domain.id} and r.day between ${from}::date and ${to}::date and d.authenticated
     group by r.source_ip order by messages desc`.execute(ctx.db);
  return rows.rows.map((s) => {
    const { kind, name } = classify(known, { source_ip: s.source_ip, signed_by_posthorn: s.signed });
    return {
      source_ip: s.source_ip,
      kind,
      name,
      messages: Number(s.messages),
      aligned: Number(s.aligned),
      reporters: s.reporters,
      first_day: s.first_day,
      last_day: s.last_day,
    };
  });
}

/**
 * Each day's messages and alignment, all sources and the known ones (Posthorn's and labelled):
 * a source is known by what the whole window shows of it, so a relay's address whose mail stops
 * passing DKIM one day still counts as Posthorn's that day, and its drop shows.
 */
export async function seriesOver(
  ctx: Pick<DomainContext, 'db'>,
  domainId: string,
  sources: { source_ip: string; kind: SourceKind }[],
  from: string,
  to: string,
) {
  const kinds = new Map(sources.map((s) => [s.source_ip, s.kind]));
  const rows = await sql<{ day: string; source_ip: string; messages: number; aligned: number }>`
    select r.day::text as day, r.source_ip, sum(r.count)::bigint as messages,
           coalesce(sum(r.count) filter (where r.aligned), 0)::bigint as aligned
      from dmarc_records r join dmarc_reports d on d.id = r.report_id
     where r.domain_id = ${domainId} and r.day between ${from}::date and ${to}::date and d.authenticated
     group by r.day, r.source_ip`.execute(ctx.db);
  const days = new Map<
    string,
    { messages: number; aligned: number; known_messages: number; known_aligned: number }
  >();
  for (let d = from; d <= to; d = addDays(d, 1))
    days.set(d, { messages: 0, aligned: 0, known_messages: 0, known_aligned: 0 });
  for (const r of rows.rows) {
    const day = days.get(r.day);
    if (!day) continue;
    day.messages += Number(r.messages);
    day.aligned += Number(r.aligned);
    if ((kinds.get(r.source_ip) ?? 'unknown') !== 'unknown') {
      day.known_messages += Number(r.messages);
      day.known_aligned += Number(r.aligned);
    }
  }
  return [...days].map(([day, v]) => ({ day, ...v }));
}

/**
 * The TLS report results that count: those of reports whose mail was authenticated (as for
 * aggregate reports: a forged report neither shows failures nor hides them), none dated in the future.
 */
const TLS_RESULTS = sql`tls_report_results t join dmarc_reports d on d.id = t.report_id`;
const countedTls = (domainId: string) =>
  sql`t.domain_id = ${domainId} and d.authenticated and t.day <= current_date + 1`;

/** TLS sessions over the newest `days` days of TLS reports: by policy domain, and failures by MX and type. */
async function tlsOver(ctx: Ctx, domainId: string, days: number) {
  const latest = await sql<{ day: string | null }>`
    select max(t.day)::text as day from ${TLS_RESULTS} where ${countedTls(domainId)}`.execute(ctx.db);
  const to = latest.rows[0].day;
  if (!to) return { window: null, policies: [], failures: [] };
  const from = addDays(to, 1 - days);
  const policies = await sql<{
    policy_domain: string;
    policy_type: string;
    successful: number;
    failed: number;
  }>`
    select t.policy_domain, t.policy_type, sum(t.successful)::bigint as successful, sum(t.failed)::bigint as failed
      from ${TLS_RESULTS} where ${countedTls(domainId)} and t.day between ${from}::date and ${to}::date
     group by 1, 2 order by 1, 2`.execute(ctx.db);
  const failures = await sql<{
    policy_domain: string;
    receiving_mx: string | null;
    result_type: string;
    sessions: number;
  }>`
    select t.policy_domain, f ->> 'receiving_mx_hostname' as receiving_mx, f ->> 'result_type' as result_type,
           sum((f ->> 'failed_session_count')::bigint)::bigint as sessions
      from ${TLS_RESULTS} cross join lateral jsonb_array_elements(t.failures) as f
     where ${countedTls(domainId)} and t.day between ${from}::date and ${to}::date
     group by 1, 2, 3 order by sessions desc, 1, 2, 3`.execute(ctx.db);
  return {
    window: { from, to },
    policies: policies.rows.map((r) => ({
      policy_domain: r.policy_domain,
      policy_type: r.policy_type,
      successful: Number(r.successful),
      failed: Number(r.failed),
    })),
    failures: failures.rows.map((r) => ({ ...r, sessions: Number(r.sessions) })),
  };
}

/** Authenticated aggregate reports of a domain, none dated in the future (a forger's trick). */
const counted = (domainId: string) =>
  sql`domain_id = ${domainId} and kind = 'aggregate' and authenticated and begin_at <= now() + interval '1 day'`;

/**
 * The policy the newest authenticated aggregate report saw, since when such reports have seen it,
 * and over how many days those reports arrived: reports sent within minutes, whatever days their
 * ranges name, never stand in for days of observation.
 */
async function policySeen(ctx: Ctx, domainId: string) {
  const latest = await sql<{ policy: unknown; begin_at: Date }>`
    select policy, begin_at from dmarc_reports where ${counted(domainId)}
     order by begin_at desc limit 1`.execute(ctx.db);
  const newest = latest.rows[0];
  const policy = newest?.policy as { p?: string | null; adkim?: string | null; aspf?: string | null } | null;
  if (!newest?.begin_at || !policy) return null;
  const p = (policy.p ?? 'none').toLowerCase();
  const since = await sql<{ day: string; arrived: number }>`
    select min(begin_at)::date::text as day,
           floor(extract(epoch from max(received_at) - min(received_at)) / 86400)::int + 1 as arrived
      from dmarc_reports
     where ${counted(domainId)}
       and begin_at > coalesce((select max(begin_at) from dmarc_reports
                                 where ${counted(domainId)}
                                   and lower(coalesce(policy ->> 'p', 'none')) <> ${p}), '-infinity')`.execute(
    ctx.db,
  );
  return {
    policy: { p, adkim: policy.adkim ?? null, aspf: policy.aspf ?? null },
    since: since.rows[0].day,
    arrived: since.rows[0].arrived,
    latest: dayOf(newest.begin_at),
  };
}

/**
 * The aggregate reports received over the last `days` days whose mail was not authenticated for
 * their reporter: counted for nothing, shown apart (how many, their messages, who they claim to be).
 */
async function unauthenticatedOver(ctx: Ctx, domainId: string, days: number) {
  const row = await sql<{ reports: number; messages: string; reporters: string[] }>`
    select count(*)::int as reports, coalesce(sum(total), 0)::text as messages,
           coalesce((array_agg(distinct coalesce(reporter_domain, reporter))
                      filter (where coalesce(reporter_domain, reporter) is not null))[1:20], '{}') as reporters
      from dmarc_reports
     where domain_id = ${domainId} and kind = 'aggregate' and not authenticated
       and received_at > now() - make_interval(days => ${days})`.execute(ctx.db);
  const r = row.rows[0];
  return { reports: r.reports, messages: Number(r.messages), reporters: r.reporters };
}

const group = (sources: { kind: SourceKind; messages: number; aligned: number }[], kind: SourceKind) => {
  const of = sources.filter((s) => s.kind === kind);
  return {
    sources: of.length,
    messages: of.reduce((n, s) => n + s.messages, 0),
    aligned: of.reduce((n, s) => n + s.aligned, 0),
  };
};

/**
 * GET /domains/{id}/dmarc: what the domain's reports say over the newest `days` days of aggregate
 * reports (a window that ends at the latest report, so a domain whose reports stopped still shows
 * them): the summary, each day's volume and alignment, the sources grouped as Posthorn's own,
 * labelled and unknown, TLS sessions and failures, the policy coach, and the reports received.
 * Only authenticated reports are counted; the others are summed up apart (`unauthenticated`).
 */
export async function dmarcOverview(ctx: Ctx, domain: Domain, days = COACH_DAYS) {
  const known = await knownSources(ctx, domain);
  const latest = await sql<{ day: string | null }>`
    select max(r.day)::text as day from dmarc_records r join dmarc_reports d on d.id = r.report_id
     where r.domain_id = ${domain.id} and d.authenticated and r.day <= current_date + 1`.execute(ctx.db);
  const to = latest.rows[0].day ?? dayOf(now());
  const from = addDays(to, 1 - days);
  const sources = latest.rows[0].day ? await sourcesOver(ctx, domain, known, from, to) : [];
  const series = latest.rows[0].day ? await seriesOver(ctx, domain.id, sources, from, to) : [];
  const coachFrom = addDays(to, 1 - COACH_DAYS);
  const coachSources =
    days === COACH_DAYS
      ? sources
      : latest.rows[0].day
        ? await sourcesOver(ctx, domain, known, coachFrom, to)
        : [];
  const seen = await policySeen(ctx, domain.id);
  const knownOf = coachSources.filter((s) => s.kind !== 'unknown');
  const advice = coach({
    policy: seen?.policy ?? null,
    daysObserved: seen ? daysBetween(seen.since, seen.latest) + 1 : 0,
    daysArrived: seen?.arrived ?? 0,
    daysSinceLatest: seen ? daysBetween(seen.latest, dayOf(now())) : null,
    knownMessages: knownOf.reduce((n, s) => n + s.messages, 0),
    knownAligned: knownOf.reduce((n, s) => n + s.aligned, 0),
    unknownSources: coachSources.filter((s) => s.kind === 'unknown').length,
    reportAddress: reportAddress(ctx, 'dmarc', domain.id),
    domain: domain.name,
  });
  const messages = sources.reduce((n, s) => n + s.messages, 0);
  const aligned = sources.reduce((n, s) => n + s.aligned, 0);
  return {
    object: 'domain_dmarc' as const,
    window: { from, to, days },
    summary: {
      messages,
      aligned,
      aligned_rate: messages === 0 ? null : aligned / messages,
      reports: await reportCount(ctx, domain.id, from, to),
      policy: seen?.policy.p ?? null,
    },
    unauthenticated: await unauthenticatedOver(ctx, domain.id, days),
    groups: {
      posthorn: group(sources, 'posthorn'),
      labelled: group(sources, 'labelled'),
      unknown: group(sources, 'unknown'),
    },
    series,
    sources: sources.slice(0, 200),
    labels: known.labels.map(({ block: _, ...l }) => l),
    tls: await tlsOver(ctx, domain.id, days),
    coach: advice,
    reports: await latestReports(ctx, domain.id),
  };
}

async function reportCount(ctx: Ctx, domainId: string, from: string, to: string) {
  const row = await sql<{ n: number }>`
    select count(distinct r.report_id)::int as n from dmarc_records r join dmarc_reports d on d.id = r.report_id
     where r.domain_id = ${domainId} and r.day between ${from}::date and ${to}::date and d.authenticated`.execute(
    ctx.db,
  );
  return row.rows[0].n;
}

async function latestReports(ctx: Ctx, domainId: string) {
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
      'reporter_domain',
      'authenticated',
    ])
    .where('domain_id', '=', domainId)
    .orderBy('received_at', 'desc')
    .limit(100)
    .execute();
  return reports.map((r) => ({
    id: r.id,
    kind: r.kind,
    reporter: r.reporter,
    reporter_email: r.reporter_email,
    reporter_domain: r.reporter_domain,
    authenticated: r.authenticated,
    report_id: r.report_id,
    begin: r.begin_at?.toISOString() ?? null,
    end: r.end_at?.toISOString() ?? null,
    messages: Number(r.total),
    file: r.file,
    reason: r.reason,
    received_at: r.received_at.toISOString(),
  }));
}
