import { BlockList, isIP } from 'node:net';
import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import type { DomainsTable } from '../../db/schema.ts';
import { routeView } from '../../delivery/routes/view.ts';
import type { DomainContext } from '../core/context.ts';
import { NotFoundError, ValidationError } from '../core/errors.ts';

/**
 * Who the sources in a domain's DMARC reports are (issue 34): Posthorn's own (a direct route's
 * source address, or mail signed with the domain's DKIM key that Posthorn holds, which is how mail
 * through a relay or provider route shows), sources a person labelled ("our CRM": an address or
 * network), and the unknown rest: someone else sending as the domain, or a service not yet named.
 */

export type SourceKind = 'posthorn' | 'labelled' | 'unknown';

export interface SourceLabel {
  id: string;
  /** An address (`203.0.113.7`) or a network (`203.0.113.0/24`). */
  source: string;
  label: string;
  created_at: string;
}

export interface Known {
  /** Direct routes' source addresses: address → route name. */
  direct: Map<string, string>;
  labels: (SourceLabel & { block: BlockList })[];
  /** The DKIM selectors Posthorn signs the domain's mail with. */
  selectors: string[];
}

/** An address or network as the label shows it: a single address without its /32 or /128. */
const shown = (cidr: string) => cidr.replace(/\/(32|128)$/, '');

function blockOf(source: string): BlockList {
  const block = new BlockList();
  const [address, prefix] = source.split('/');
  const type = isIP(address) === 6 ? 'ipv6' : 'ipv4';
  block.addSubnet(address, Number(prefix ?? (type === 'ipv6' ? 128 : 32)), type);
  return block;
}

type DomainFacts = Pick<
  Selectable<DomainsTable>,
  'id' | 'name' | 'project_id' | 'dkim_selector' | 'next_dkim_selector'
>;

/**
 * What is known of a domain's sources: its direct routes' addresses, its labels, and the DKIM
 * selectors Posthorn holds for it (the current and next ones, and every key it keeps for the name).
 */
export async function knownSources(
  ctx: Pick<DomainContext, 'db' | 'config'>,
  domain: DomainFacts,
): Promise<Known> {
  const direct = new Map(routeView(ctx.config).directSources);
  const [labels, keys] = await Promise.all([
    listLabels(ctx, domain.id),
    ctx.db
      .selectFrom('dkim_keys')
      .select('selector')
      .where('domain', '=', domain.name)
      .where('project_id', '=', domain.project_id)
      .execute(),
  ]);
  const selectors = [domain.dkim_selector, domain.next_dkim_selector, ...keys.map((k) => k.selector)];
  return {
    direct,
    labels: labels.map((l) => ({ ...l, block: blockOf(l.source) })),
    selectors: [...new Set(selectors.filter((x): x is string => !!x))],
  };
}

/** Which group a source belongs to, and the name it is shown with. */
export function classify(
  known: Known,
  source: { source_ip: string; signed_by_posthorn: boolean },
): { kind: SourceKind; name: string | null } {
  const route = known.direct.get(source.source_ip);
  if (route) return { kind: 'posthorn', name: `Posthorn: direct route "${route}"` };
  if (source.signed_by_posthorn)
    return { kind: 'posthorn', name: "Posthorn: signed with the domain's DKIM key" };
  const type = isIP(source.source_ip) === 6 ? 'ipv6' : 'ipv4';
  const label = known.labels.find((l) => l.block.check(source.source_ip, type));
  if (label) return { kind: 'labelled', name: label.label };
  return { kind: 'unknown', name: null };
}

/**
 * The SQL condition "this record's mail carried a passing DKIM signature of the domain with one of
 * the selectors Posthorn holds for it" (for `dmarc_records as r`; `known.selectors` read once).
 */
export function signedByPosthorn(domainName: string, known: Pick<Known, 'selectors'>) {
  return sql<boolean>`exists (
    select 1 from jsonb_array_elements(r.auth -> 'dkim') as d
     where lower(d ->> 'domain') = ${domainName.toLowerCase()}
       and lower(d ->> 'result') = 'pass'
       and d ->> 'selector' = any(${known.selectors}::text[]))`;
}

export async function listLabels(ctx: Pick<DomainContext, 'db'>, domainId: string): Promise<SourceLabel[]> {
  const rows = await ctx.db
    .selectFrom('dmarc_source_labels')
    .select(['id', sql<string>`source::text`.as('source'), 'label', 'created_at'])
    .where('domain_id', '=', domainId)
    .orderBy('source')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    source: shown(r.source),
    label: r.label,
    created_at: r.created_at.toISOString(),
  }));
}

/**
 * An address or network a person names, checked: `203.0.113.7`, `203.0.113.0/24`, `2001:db8::/32`.
 * Node's isIP takes an IPv6 zone id (`fe80::1%eth0`), which PostgreSQL's `inet` refuses: the
 * address is checked here, in full, before it reaches the database.
 */
function checkSource(value: string): string {
  const [address, prefix, ...rest] = value.trim().split('/');
  const version = /^[0-9a-f.:]+$/i.test(address ?? '') ? isIP(address) : 0;
  const max = version === 6 ? 128 : 32;
  if (
    version === 0 ||
    rest.length > 0 ||
    (prefix !== undefined && (!/^\d{1,3}$/.test(prefix) || Number(prefix) > max))
  )
    throw new ValidationError('source must be an IP address or a network such as 203.0.113.0/24');
  return prefix === undefined ? address : `${address}/${prefix}`;
}

/** PUT /domains/{id}/dmarc/labels: names an address or network (a second label for it replaces the first). */
export async function labelSource(
  ctx: Pick<DomainContext, 'db'>,
  domainId: string,
  input: { source: string; label: string },
): Promise<SourceLabel> {
  const source = checkSource(input.source);
  const label = input.label.trim();
  if (label.length === 0 || label.length > 100)
    throw new ValidationError('label must be 1 to 100 characters');
  // network(): a host address given with a prefix (203.0.113.7/24) names its network
  const row = await sql<{ id: string; source: string; label: string; created_at: Date }>`
    insert into dmarc_source_labels (domain_id, source, label)
    values (${domainId}, network(${source}::inet)::cidr, ${label})
    on conflict (domain_id, source) do update set label = excluded.label
    returning id, source::text as source, label, created_at`.execute(ctx.db);
  const r = row.rows[0];
  return { id: r.id, source: shown(r.source), label: r.label, created_at: r.created_at.toISOString() };
}

/** DELETE /domains/{id}/dmarc/labels/{label_id}. */
export async function removeLabel(ctx: Pick<DomainContext, 'db'>, domainId: string, labelId: string) {
  if (!/^[0-9a-f-]{36}$/i.test(labelId)) throw new NotFoundError('Label');
  const removed = await ctx.db
    .deleteFrom('dmarc_source_labels')
    .where('domain_id', '=', domainId)
    .where('id', '=', labelId)
    .executeTakeFirst();
  if (Number(removed.numDeletedRows) === 0) throw new NotFoundError('Label');
}
