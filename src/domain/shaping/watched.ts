import type { Db } from '../../db/database.ts';
import { domainOf } from '../../mail/address.ts';
import type { Scope } from './breaker.ts';

/**
 * What the circuit breaker watches a message as part of: its campaign or flow, its sending domain
 * (a verified domain of its project) and its project. Transactional mail is neither counted nor
 * held, unless the operator chose (POSTHORN_BREAKER_HOLDS_TRANSACTIONAL) that a domain's or
 * project's stop holds it too: then it counts toward them as well. The service's own mail (codes,
 * notices: stream `system`) is never watched.
 */

export interface Watched {
  scope: Scope;
  id: string;
  projectId: string;
}

interface Row {
  project_id: string;
  from_address: string;
  stream: string;
  campaign_id: string | null;
  flow_id: string | null;
}

const CACHE_MS = 60_000;
const cache = new WeakMap<Db, Map<string, { id: string | null; at: number }>>();

const keyOf = (row: Pick<Row, 'project_id' | 'from_address'>) =>
  `${row.project_id}:${domainOf(row.from_address).toLowerCase()}`;

/** The ids of the rows' sending domains (null: not one of the project's), read at most every minute. */
export async function sendingDomainIds(
  db: Db,
  rows: Row[],
  withTransactional = false,
): Promise<Map<string, string | null>> {
  let known = cache.get(db);
  if (!known) {
    known = new Map();
    cache.set(db, known);
  }
  const t = Date.now();
  const wanted = [
    ...new Set(
      rows
        .filter((r) => r.stream !== 'system' && (withTransactional || r.stream !== 'transactional'))
        .map(keyOf),
    ),
  ];
  const stale = wanted.filter((k) => {
    const hit = known.get(k);
    return !hit || t - hit.at > CACHE_MS;
  });
  if (stale.length > 0) {
    const pairs = stale.map((k) => k.split(/:(.*)/s).slice(0, 2) as [string, string]);
    const found = await db
      .selectFrom('domains')
      .select(['id', 'project_id', 'name'])
      .where((eb) => eb.or(pairs.map(([p, d]) => eb.and([eb('project_id', '=', p), eb('name', '=', d)]))))
      .execute();
    for (const k of stale) known.set(k, { id: null, at: t });
    for (const f of found) known.set(`${f.project_id}:${f.name}`, { id: f.id, at: t });
  }
  return new Map(wanted.map((k) => [k, known.get(k)?.id ?? null]));
}

/** The scopes one message counts toward, the narrowest first. */
export function watchedOf(
  row: Row,
  domainIds: Map<string, string | null>,
  withTransactional = false,
): Watched[] {
  if (row.stream === 'system' || (row.stream === 'transactional' && !withTransactional)) return [];
  const projectId = row.project_id;
  const out: Watched[] = [];
  if (row.campaign_id) out.push({ scope: 'campaign', id: row.campaign_id, projectId });
  else if (row.flow_id) out.push({ scope: 'flow', id: row.flow_id, projectId });
  const domainId = domainIds.get(keyOf(row));
  if (domainId) out.push({ scope: 'domain', id: domainId, projectId });
  out.push({ scope: 'project', id: projectId, projectId });
  return out;
}
