import { generateKeyPairSync } from 'node:crypto';
import { type DkimKey, dkimKey } from '../../mail/dkim.ts';
import type { DomainContext } from '../core/context.ts';

export function newRsaKeyPair() {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicBase64: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
  };
}

/** The DNS TXT value that publishes a DKIM public key. */
export function dkimRecordValue(publicBase64: string): string {
  return `v=DKIM1; k=rsa; p=${publicBase64}`;
}

export const SHARED_SELECTOR = 'posthorn1';

/**
 * The shared domain's signing key: created on first use (private half encrypted at rest), the same
 * for every node since it lives in the database.
 */
export async function sharedDomainKey(ctx: DomainContext): Promise<DkimKey & { publicBase64: string }> {
  const domain = ctx.config.sharedDomain;
  let row = await ctx.db
    .selectFrom('dkim_keys')
    .selectAll()
    .where('project_id', 'is', null)
    .where('domain', '=', domain)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  if (!row) {
    const pair = newRsaKeyPair();
    await ctx.db
      .insertInto('dkim_keys')
      .values({
        project_id: null,
        domain,
        selector: SHARED_SELECTOR,
        private_key: ctx.secrets.encrypt(pair.privatePem),
        public_key: pair.publicBase64,
      })
      .onConflict((oc) => oc.columns(['domain', 'selector']).doNothing())
      .execute();
    row = await ctx.db
      .selectFrom('dkim_keys')
      .selectAll()
      .where('domain', '=', domain)
      .where('selector', '=', SHARED_SELECTOR)
      .executeTakeFirstOrThrow();
  }
  return {
    ...dkimKey(row.domain, row.selector, ctx.secrets.decrypt(row.private_key).toString('utf8')),
    publicBase64: row.public_key,
  };
}

/**
 * The key to sign a project's mail from `domain`: the domain's own newest key when it is one of the
 * project's verified domains (its current selector), else the shared domain's key. Each call of
 * this factory has its own cache, so a caller decides how long keys are reused.
 */
export function createSigningKeys(ctx: DomainContext) {
  // promises are cached, so the rows of one job signing in parallel share one lookup
  const cache = new Map<string, Promise<DkimKey>>();
  const lookup = async (projectId: string, domain: string): Promise<DkimKey> => {
    const row = await ctx.db
      .selectFrom('dkim_keys as k')
      .innerJoin('domains as d', (join) =>
        join
          .onRef('d.project_id', '=', 'k.project_id')
          .onRef('d.name', '=', 'k.domain')
          .onRef('d.dkim_selector', '=', 'k.selector'),
      )
      .select(['k.domain', 'k.selector', 'k.private_key'])
      .where('k.project_id', '=', projectId)
      .where('k.domain', '=', domain)
      .where('d.status', '=', 'verified')
      .executeTakeFirst();
    return row
      ? dkimKey(row.domain, row.selector, ctx.secrets.decrypt(row.private_key).toString('utf8'))
      : cachedSharedKey(ctx);
  };
  return (projectId: string, domain: string): Promise<DkimKey> => {
    const id = `${projectId}:${domain}`;
    let key = cache.get(id);
    if (!key) {
      key = lookup(projectId, domain);
      cache.set(id, key);
    }
    return key;
  };
}

// The shared domain's key never changes while the process runs: parse it once.
const sharedKeys = new WeakMap<DomainContext, Promise<DkimKey>>();
function cachedSharedKey(ctx: DomainContext): Promise<DkimKey> {
  let key = sharedKeys.get(ctx);
  if (!key) {
    key = sharedDomainKey(ctx);
    key.catch(() => sharedKeys.delete(ctx));
    sharedKeys.set(ctx, key);
  }
  return key;
}
