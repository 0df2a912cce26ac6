import { isIP } from 'node:net';
import type { Selectable } from 'kysely';
import { enqueue } from '../../db/enqueue.ts';
import type { DomainRecord, DomainsTable } from '../../db/schema.ts';
import { type Caller, requireProjectAdmin } from '../accounts/projects.ts';
import { normalizeHostname } from '../core/addresses.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError, ValidationError } from '../core/errors.ts';
import { findInProject } from '../core/find.ts';
import { randomBase62 } from '../core/secrets.ts';
import { reportAddress } from '../dmarc/addresses.ts';
import { requireFeature } from '../plans/plans.ts';
import { projectFacts } from '../plans/project-facts.ts';
import { presentRate } from '../shaping/sending-rates.ts';
import { presentWarmup } from '../shaping/warmup.ts';
import { projectsWithWebhooks } from '../webhooks/subscribed.ts';
import { newRsaKeyPair } from './dkim-keys.ts';
import { type DnsLookup, DnsUnavailableError } from './dns-lookup.ts';
import { customerDomainRecords } from './dns-records.ts';

type DomainRow = Selectable<DomainsTable>;

/** Validates and normalises a sending domain: lower case, IDNA to punycode, no trailing dot. */
export function normalizeSendingDomain(input: unknown, sharedDomain: string): string {
  if (input === undefined || input === null)
    throw new ValidationError('`domain` is required: the domain you send from, like example.com');
  if (typeof input !== 'string') throw new ValidationError('`domain` must be a string, like example.com');
  const raw = input.trim().replace(/\.$/, '');
  if (raw === '') throw new ValidationError('`domain` must not be empty');
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw) || raw.includes('/')) {
    throw new ValidationError('`domain` must be a bare domain like example.com, without a scheme or path');
  }
  if (/\s/.test(raw)) throw new ValidationError('`domain` must not contain spaces');
  if (raw.length > 253) throw new ValidationError('`domain` must be at most 253 characters');
  if (isIP(raw.replace(/^\[|\]$/g, '')) !== 0)
    throw new ValidationError('`domain` must be a domain name, not an IP address');
  const name = normalizeHostname(raw);
  if (!name)
    throw new ValidationError(
      `\`domain\` "${raw.slice(0, 100)}" is not a valid domain name (it needs at least two labels, like example.com)`,
    );
  if (name === 'localhost' || name.endsWith('.localhost') || name.endsWith('.local')) {
    throw new ValidationError('`domain` must be a public domain, not a local name');
  }
  if (name === sharedDomain || name.endsWith(`.${sharedDomain}`)) {
    throw new ValidationError(
      `\`domain\` ${name} is the shared domain (or under it); add a domain of your own`,
    );
  }
  return name;
}

async function publicKeysOf(ctx: Pick<DomainContext, 'db'>, row: DomainRow): Promise<Map<string, string>> {
  const keys = await ctx.db
    .selectFrom('dkim_keys')
    .select(['selector', 'public_key'])
    .where('project_id', '=', row.project_id)
    .where('domain', '=', row.name)
    .execute();
  return new Map(keys.map((k) => [k.selector, k.public_key]));
}

/** Where a domain's DMARC and TLS reports go: its addresses on the inbound domain. */
const reportsOf = (ctx: Pick<DomainContext, 'config' | 'secrets'>, row: DomainRow) => ({
  dmarc: reportAddress(ctx, 'dmarc', row.id),
  tlsrpt: reportAddress(ctx, 'tlsrpt', row.id),
});

export async function presentDomain(ctx: Pick<DomainContext, 'config' | 'db' | 'secrets'>, row: DomainRow) {
  const checked = new Map(row.records.map((r) => [`${r.type} ${r.name}`, r]));
  const records = customerDomainRecords(
    ctx.config,
    row,
    await publicKeysOf(ctx, row),
    reportsOf(ctx, row),
  ).map((r) => {
    const last = checked.get(`${r.type} ${r.name}`);
    return { ...r, status: last?.status ?? 'pending', ...(last?.found ? { found: last.found } : {}) };
  });
  return {
    id: row.id,
    object: 'domain' as const,
    name: row.name,
    status: row.status,
    records,
    created_at: row.created_at.toISOString(),
    verified_at: row.verified_at?.toISOString() ?? null,
    last_checked_at: row.last_checked_at?.toISOString() ?? null,
    inbound_enabled: row.inbound_enabled,
    open_tracking: row.open_tracking,
    click_tracking: row.click_tracking,
    rate: presentRate(row),
    warmup: await presentWarmup(ctx.db, row),
  };
}

/** Adds a sending domain to a project with a new DKIM key (private half encrypted at rest). */
export async function addDomain(
  ctx: DomainContext,
  project: { id: string; plan: string },
  input: { domain?: unknown },
) {
  const name = normalizeSendingDomain(input.domain, ctx.config.sharedDomain);
  requireFeature(project.plan, 'custom_domains');
  const pair = newRsaKeyPair();
  const selector = `ph${randomBase62(8).toLowerCase()}`;
  try {
    const row = await ctx.db.transaction().execute(async (tx) => {
      const domain = await tx
        .insertInto('domains')
        .values({ project_id: project.id, name, dkim_selector: selector })
        .returningAll()
        .executeTakeFirstOrThrow();
      await tx
        .insertInto('dkim_keys')
        .values({
          project_id: project.id,
          domain: name,
          selector,
          private_key: ctx.secrets.encrypt(pair.privatePem),
          public_key: pair.publicBase64,
        })
        .execute();
      return domain;
    });
    return presentDomain(ctx, row);
  } catch (err) {
    if ((err as { code?: string }).code === '23505')
      throw new ConflictError(`${name} is already a domain of this project`);
    throw err;
  }
}

export async function findDomain(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  id: string,
): Promise<DomainRow> {
  return findInProject(ctx.db, 'domains', 'Domain', projectId, id);
}

/** GET /domains/{id}: one of the project's domains, with its records. */
export async function getDomain(ctx: DomainContext, projectId: string, id: string) {
  return presentDomain(ctx, await findDomain(ctx, projectId, id));
}

/** POST /domains/{id}/check: looks one of the project's domains up in DNS now (see checkDomain). */
export async function verifyDomain(ctx: DomainContext, dns: DnsLookup, projectId: string, id: string) {
  return checkDomain(ctx, dns, await findDomain(ctx, projectId, id));
}

/** GET /projects/{id}/domains: the domains of a project the caller administers. */
export async function listProjectDomains(ctx: DomainContext, caller: Caller, projectId: string) {
  await requireProjectAdmin(ctx.db, caller, projectId);
  return listDomains(ctx, projectId);
}

/** POST /projects/{id}/domains: adds a domain to a project the caller administers. */
export async function addProjectDomain(
  ctx: DomainContext,
  caller: Caller,
  projectId: string,
  input: { domain?: unknown },
) {
  await requireProjectAdmin(ctx.db, caller, projectId);
  return addDomain(ctx, await projectFacts(ctx, projectId), input);
}

/** POST /projects/{id}/domains/{id}/check: checks a domain of a project the caller administers. */
export async function verifyProjectDomain(
  ctx: DomainContext,
  caller: Caller,
  dns: DnsLookup,
  projectId: string,
  id: string,
) {
  await requireProjectAdmin(ctx.db, caller, projectId);
  return verifyDomain(ctx, dns, projectId, id);
}

export async function listDomains(ctx: DomainContext, projectId: string) {
  const rows = await ctx.db
    .selectFrom('domains')
    .selectAll()
    .where('project_id', '=', projectId)
    .orderBy('created_at')
    .execute();
  return Promise.all(rows.map((r) => presentDomain(ctx, r)));
}

export async function deleteDomain(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  const row = await findDomain(ctx, projectId, id);
  await ctx.db.transaction().execute(async (tx) => {
    await tx
      .deleteFrom('dkim_keys')
      .where('project_id', '=', projectId)
      .where('domain', '=', row.name)
      .execute();
    await tx.deleteFrom('domains').where('id', '=', row.id).execute();
  });
}

const compact = (v: string) => v.replace(/\s+/g, '').toLowerCase();

/** Compares one expected record with what DNS answers. */
async function checkRecord(dns: DnsLookup, r: Omit<DomainRecord, 'status'>): Promise<DomainRecord> {
  if (r.type === 'MX') {
    const found = await dns.mx(r.name);
    if (found.length === 0) return { ...r, status: 'missing' };
    const ok = found.some((m) => m.exchange.toLowerCase().replace(/\.$/, '') === r.value);
    return {
      ...r,
      status: ok ? 'verified' : 'mismatch',
      found: found.map((m) => `${m.priority} ${m.exchange}`),
    };
  }
  const txt = await dns.txt(r.name);
  // a CNAME at the name hides any TXT record there: say so instead of a bare "missing"
  const cnames = (await dns.cname(r.name)).map((c) => `CNAME ${c}`);
  if (r.name.includes('._domainkey.')) {
    const keys = txt.filter((t) => /(^|;)\s*p=/.test(t.joined) || t.joined.startsWith('v=DKIM1'));
    if (keys.length === 0)
      return { ...r, status: 'missing', ...(txt.length ? { found: txt.map((t) => t.joined) } : {}) };
    const ok = keys.some((t) => compact(t.joined) === compact(r.value));
    return { ...r, status: ok ? 'verified' : 'mismatch', found: keys.map((t) => t.joined) };
  }
  // the record's version tag: v=spf1, v=DMARC1, v=TLSRPTv1
  const prefix = r.value.split(/[;\s]/)[0];
  const matching = txt.filter((t) => t.joined.toLowerCase().startsWith(prefix.toLowerCase()));
  const found = [...matching.map((t) => t.joined), ...cnames];
  if (matching.length === 0) return { ...r, status: 'missing', ...(found.length ? { found } : {}) };
  if (prefix === 'v=spf1') {
    if (matching.length > 1)
      return {
        ...r,
        status: 'mismatch',
        found: [
          ...found,
          `${matching.length} v=spf1 records: receivers treat that as an error; merge them into one`,
        ],
      };
    const include = r.value.split(' ').find((t) => t.startsWith('include:')) as string;
    const includes = matching[0].joined.toLowerCase().split(/\s+/).includes(include);
    return { ...r, status: includes ? 'verified' : 'mismatch', found };
  }
  return { ...r, status: 'verified', found };
}

/**
 * Looks every record up now and stores the result. The domain is verified when the required
 * records (DKIM, return-path SPF and MX) match; a verified domain whose records stop matching is
 * `failed`. A DNS failure (SERVFAIL, timeout) changes nothing and says so.
 */
export async function checkDomain(
  ctx: Pick<DomainContext, 'config' | 'db' | 'secrets'>,
  dns: DnsLookup,
  row: DomainRow,
) {
  const expected = customerDomainRecords(ctx.config, row, await publicKeysOf(ctx, row), reportsOf(ctx, row));
  const records = await Promise.all(expected.map((r) => checkRecord(dns, r)));
  const ok = records.filter((r) => r.required).every((r) => r.status === 'verified');
  // a rotated key takes over once its record is published
  const rotated =
    row.next_dkim_selector !== null &&
    records.some((r) => r.name.startsWith(`${row.next_dkim_selector}.`) && r.status === 'verified');
  const status = ok
    ? 'verified'
    : row.status === 'verified' || row.status === 'failed'
      ? 'failed'
      : 'pending';
  const now = new Date();
  const updated = await ctx.db.transaction().execute(async (tx) => {
    const row2 = await tx
      .updateTable('domains')
      .set({
        status,
        records: JSON.stringify(records),
        last_checked_at: now,
        ...(rotated ? { dkim_selector: row.next_dkim_selector, next_dkim_selector: null } : {}),
        verified_at: ok ? (row.verified_at ?? now) : row.verified_at,
        failed_at: status === 'failed' && row.status !== 'failed' ? now : row.failed_at,
      })
      .where('id', '=', row.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    if (status !== row.status && status !== 'pending') {
      const failing = records
        .filter((r) => r.required && r.status !== 'verified')
        .map((r) => `${r.type} ${r.name}: ${r.status}`);
      await tx
        .insertInto('domain_events')
        .values({
          domain_id: row.id,
          project_id: row.project_id,
          type: `domain.${status}`,
          detail: JSON.stringify(failing.length ? { failing } : {}),
        })
        .execute();
      if ((await projectsWithWebhooks(tx, [row.project_id])).size > 0)
        await enqueue(tx, [
          { task: 'webhook_dispatch', payload: { domain_id: row.id, domain_event: `domain.${status}` } },
        ]);
    }
    if (rotated) {
      await tx
        .insertInto('domain_events')
        .values({
          domain_id: row.id,
          project_id: row.project_id,
          type: 'domain.dkim_rotated',
          detail: JSON.stringify({ selector: row.next_dkim_selector }),
        })
        .execute();
    }
    return row2;
  });
  return presentDomain(ctx, updated);
}

/**
 * The periodic re-check (hourly cron): pending domains every hour for their first 72 hours, then
 * daily; verified and failed domains daily. A DNS outage skips a domain until the next run.
 */
export async function recheckDomains(
  ctx: DomainContext,
  dns: DnsLookup,
  now = new Date(),
): Promise<{ checked: number; skipped: number }> {
  const hour = 3_600_000;
  const due = await ctx.db
    .selectFrom('domains')
    .selectAll()
    .where((eb) =>
      eb.or([
        eb.and([eb('status', '=', 'pending'), eb('created_at', '>', new Date(now.getTime() - 72 * hour))]),
        eb('last_checked_at', 'is', null),
        eb('last_checked_at', '<', new Date(now.getTime() - 23 * hour)),
      ]),
    )
    .orderBy('last_checked_at', 'asc')
    .limit(1000)
    .execute();
  let skipped = 0;
  for (const row of due) {
    try {
      await checkDomain(ctx, dns, row);
    } catch (err) {
      if (!(err instanceof DnsUnavailableError)) throw err;
      skipped++;
    }
  }
  return { checked: due.length - skipped, skipped };
}

/**
 * Starts a DKIM key rotation: a new key under a new selector, listed among the records to publish.
 * Mail stays signed with the current key until a check finds the new record, then switches.
 */
export async function rotateDkimKey(ctx: DomainContext, projectId: string, id: string) {
  const row = await findDomain(ctx, projectId, id);
  const pair = newRsaKeyPair();
  const selector = `ph${randomBase62(8).toLowerCase()}`;
  const updated = await ctx.db.transaction().execute(async (tx) => {
    if (row.next_dkim_selector) {
      // a rotation that was never published is replaced
      await tx
        .deleteFrom('dkim_keys')
        .where('project_id', '=', projectId)
        .where('domain', '=', row.name)
        .where('selector', '=', row.next_dkim_selector)
        .execute();
    }
    await tx
      .insertInto('dkim_keys')
      .values({
        project_id: projectId,
        domain: row.name,
        selector,
        private_key: ctx.secrets.encrypt(pair.privatePem),
        public_key: pair.publicBase64,
      })
      .execute();
    return tx
      .updateTable('domains')
      .set({ next_dkim_selector: selector })
      .where('id', '=', row.id)
      .returningAll()
      .executeTakeFirstOrThrow();
  });
  return presentDomain(ctx, updated);
}
