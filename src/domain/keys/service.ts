import { type Selectable, sql } from 'kysely';
import type pg from 'pg';
import type { Tx } from '../../db/database.ts';
import type { ApiKeysTable, KeyScope } from '../../db/schema.ts';
import { type Caller, presentProject, requireProjectAdmin } from '../accounts/projects.ts';
import type { DomainContext } from '../core/context.ts';
import { AuthenticationError, ConflictError, NotFoundError, ValidationError } from '../core/errors.ts';
import { GroupCommit } from '../core/group-commit.ts';
import { isUuid } from '../core/ids.ts';
import { type Cursor, keysetPage } from '../core/keyset.ts';
import { FACTS_COLUMNS, FACTS_JOINS, factsFromRow, type ProjectFacts } from '../plans/project-facts.ts';
import { listRequests } from './request-log.ts';
import { formatKey, KEY_PREFIX, newKeyId, newSecret, parseKey } from './token.ts';

export const EXPIRY_CHOICES = [30, 90, 365] as const;
type KeyRow = Selectable<ApiKeysTable>;

export function keyStatus(row: Pick<KeyRow, 'revoked_at' | 'expires_at'>, now = new Date()) {
  if (row.revoked_at) return 'revoked';
  if (row.expires_at && row.expires_at <= now) return 'expired';
  return 'active';
}

/** The API shape of a key. The secret appears only when just created or rotated. */
export function presentKey(row: KeyRow, secret?: string) {
  return {
    id: row.id,
    object: 'api_key' as const,
    name: row.name,
    scope: row.scope,
    project_id: row.project_id,
    token_prefix: `${KEY_PREFIX}${row.key_id}`,
    status: keyStatus(row),
    created_at: row.created_at.toISOString(),
    last_used_at: row.last_used_at?.toISOString() ?? null,
    expires_at: row.expires_at?.toISOString() ?? null,
    rotated_at: row.rotated_at?.toISOString() ?? null,
    created_by: row.created_by,
    ...(secret ? { key: secret } : {}),
  };
}
export type PresentedKey = ReturnType<typeof presentKey>;

export function checkKeyName(name: unknown): string {
  if (typeof name !== 'string' || name.trim() === '')
    throw new ValidationError('`name` is required and must be a non-empty string');
  if (name.length > 100) throw new ValidationError('`name` must be at most 100 characters');
  return name.trim();
}

export function checkExpiry(days: unknown): number | null {
  if (days === undefined || days === null) return null;
  if (!EXPIRY_CHOICES.includes(days as (typeof EXPIRY_CHOICES)[number])) {
    throw new ValidationError(
      '`expires_in_days` must be 30, 90 or 365 (omit it for a key that never expires)',
    );
  }
  return days as number;
}

/** Creates a key and returns it with its secret (shown this once). */
export async function createKey(
  tx: Tx,
  ctx: DomainContext,
  input: {
    accountId: string;
    projectId: string | null;
    scope: KeyScope;
    name: unknown;
    expiresInDays?: unknown;
  },
): Promise<PresentedKey> {
  const name = checkKeyName(input.name);
  const days = checkExpiry(input.expiresInDays);
  const keyId = newKeyId();
  const secret = newSecret();
  const row = await tx
    .insertInto('api_keys')
    .values({
      key_id: keyId,
      account_id: input.accountId,
      created_by: input.accountId,
      project_id: input.scope === 'project' ? input.projectId : null,
      scope: input.scope,
      name,
      secret_hash: ctx.secrets.hash(secret),
      expires_at: days ? new Date(Date.now() + days * 86_400_000) : null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return presentKey(row, formatKey(keyId, secret));
}

/** What a caller asks for when creating a key; `createKey` still checks the name and the expiry. */
export interface KeyInput {
  name: string;
  /** 30, 90 or 365; null or absent means the key never expires. */
  expires_in_days?: number | null;
  /** `project` unless given. */
  scope?: KeyScope;
}

/** Creates a key in a project the caller administers (404 otherwise); the secret is in the result. */
export async function createKeyInProject(
  ctx: DomainContext,
  caller: Caller,
  projectId: string,
  input: KeyInput,
  what = 'Project',
): Promise<PresentedKey> {
  await requireProjectAdmin(ctx.db, caller, projectId, what);
  return ctx.db.transaction().execute((tx) =>
    createKey(tx, ctx, {
      accountId: caller.accountId,
      projectId,
      scope: input.scope ?? 'project',
      name: input.name,
      expiresInDays: input.expires_in_days,
    }),
  );
}

/** Finds a key the caller may manage: a project key of a project it administers, or its own all-access key. */
async function findManagedKey(
  ctx: Pick<DomainContext, 'db'>,
  caller: Caller,
  keyId: string,
): Promise<KeyRow> {
  if (!isUuid(keyId)) throw new NotFoundError('API key');
  const row = await ctx.db.selectFrom('api_keys').selectAll().where('id', '=', keyId).executeTakeFirst();
  if (!row) throw new NotFoundError('API key');
  if (row.scope === 'all_access') {
    if (row.account_id !== caller.accountId) throw new NotFoundError('API key');
  } else {
    await requireProjectAdmin(ctx.db, caller, row.project_id as string, 'API key');
  }
  return row;
}

/** GET /projects/{id}/api-keys: the keys of a project the caller administers (never their secrets). */
export async function listProjectKeys(ctx: Pick<DomainContext, 'db'>, caller: Caller, projectId: string) {
  await requireProjectAdmin(ctx.db, caller, projectId);
  return keysOf(ctx, projectId);
}

/** GET /projects/{id}: a project the caller administers, with the caller's role and the project's keys. */
export async function getProjectWithKeys(ctx: Pick<DomainContext, 'db'>, caller: Caller, projectId: string) {
  const project = await requireProjectAdmin(ctx.db, caller, projectId);
  return { ...presentProject(project, project.role), keys: await keysOf(ctx, project.id) };
}

/** A key's request history (the project API's or the account API's), if the caller may manage the key. */
export async function listKeyRequests(
  ctx: DomainContext,
  caller: Caller,
  keyId: string,
  log: 'project' | 'account',
  page: { limit: number; offset: number },
) {
  const key = await findManagedKey(ctx, caller, keyId);
  return listRequests(ctx.db, key.id, log, page);
}

async function keysOf(ctx: Pick<DomainContext, 'db'>, projectId: string): Promise<PresentedKey[]> {
  const rows = await ctx.db
    .selectFrom('api_keys')
    .selectAll()
    .where('project_id', '=', projectId)
    .orderBy('created_at', 'asc')
    .execute();
  return rows.map((r) => presentKey(r));
}

/**
 * A page of the keys acting in a project, newest first, by the cursor of keyset.ts: its own keys and
 * the caller's all-access keys, none revoked (Resend's `GET /api-keys` pages them).
 */
export async function keysActingInPage(
  ctx: Pick<DomainContext, 'db'>,
  caller: Caller,
  projectId: string,
  cursor: Cursor,
) {
  await requireProjectAdmin(ctx.db, caller, projectId);
  const page = await keysetPage<KeyRow>(
    ctx.db,
    'api_keys',
    sql<boolean>`(project_id = ${projectId} or (scope = 'all_access' and account_id = ${caller.accountId}))
                 and revoked_at is null`,
    cursor,
  );
  return { rows: page.rows.map((r) => presentKey(r)), has_more: page.has_more };
}

/** Renames a key the caller may manage. */
export async function renameKey(
  ctx: Pick<DomainContext, 'db'>,
  caller: Caller,
  keyId: string,
  name: unknown,
) {
  const row = await findManagedKey(ctx, caller, keyId);
  const checked = checkKeyName(name);
  const renamed = await ctx.db
    .updateTable('api_keys')
    .set({ name: checked })
    .where('id', '=', row.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return presentKey(renamed);
}

/** Issues a new secret for the same key (id, name and history kept); the old secret fails at once. */
export async function rotateKey(
  ctx: Pick<DomainContext, 'db' | 'secrets'>,
  caller: Caller,
  keyId: string,
): Promise<PresentedKey> {
  const row = await findManagedKey(ctx, caller, keyId);
  if (row.revoked_at)
    throw new ConflictError('This API key is revoked; create a new key instead of rotating it');
  const secret = newSecret();
  const updated = await ctx.db
    .updateTable('api_keys')
    .set({ secret_hash: ctx.secrets.hash(secret), rotated_at: new Date() })
    .where('id', '=', row.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return presentKey(updated, formatKey(updated.key_id, secret));
}

/** Revokes a key; the next request with it, on any node, is refused (keys are checked per request). */
export async function revokeKey(
  ctx: Pick<DomainContext, 'db'>,
  caller: Caller,
  keyId: string,
): Promise<void> {
  const row = await findManagedKey(ctx, caller, keyId);
  if (row.revoked_at) return;
  await ctx.db.updateTable('api_keys').set({ revoked_at: new Date() }).where('id', '=', row.id).execute();
}

export interface AuthenticatedKey {
  id: string;
  name: string;
  scope: KeyScope;
  accountId: string;
  projectId: string | null;
}

// A project key's project facts come with the key in the same round trip: most calls need them.
const AUTH_QUERY = {
  name: 'posthorn_auth_keys',
  text: `select k.key_id, k.id, k.name, k.scope, k.account_id, k.project_id as key_project_id, k.secret_hash,
                k.expires_at, k.revoked_at, ${FACTS_COLUMNS}
           from api_keys k
           left join (projects p ${FACTS_JOINS}) on p.id = k.project_id
          where k.key_id = any($1::text[])`,
};

/** A row of AUTH_QUERY: the key columns and the project facts. */
type AuthRow = Record<string, any>;
const keyLookups = new WeakMap<pg.Pool, GroupCommit<string, AuthRow | undefined>>();

/**
 * Looks a key up by its public id. Concurrent lookups share one query (grouped like commits):
 * each query still starts after every request in it arrived, so a revocation committed before a
 * request is always seen by it.
 */
function lookupKey(pool: pg.Pool, keyId: string): Promise<AuthRow | undefined> {
  let group = keyLookups.get(pool);
  if (!group) {
    group = new GroupCommit(
      async (ids: string[]) => {
        const { rows } = await pool.query({ ...AUTH_QUERY, values: [[...new Set(ids)]] });
        const byId = new Map(rows.map((r) => [r.key_id as string, r]));
        return ids.map((id) => byId.get(id));
      },
      // a failed lookup query is the database failing: the group fails together, not 500 retries
      { maxInFlight: 2, maxWeight: 500, retryAlone: false },
    );
    keyLookups.set(pool, group);
  }
  return group.submit(keyId);
}

/**
 * Checks a presented API key: format and checksum first (no database hit for garbage), then one
 * indexed lookup and a timing-safe hash comparison. Revocation and rotation count from the next request.
 */
export async function authenticateKey(
  ctx: DomainContext,
  token: string,
): Promise<{ key: AuthenticatedKey; project: ProjectFacts | null }> {
  const parsed = parseKey(token);
  if ('problem' in parsed) throw new AuthenticationError(`Invalid API key: ${parsed.problem}`);
  const row = await lookupKey(ctx.pool, parsed.keyId);
  if (!row || !ctx.secrets.matches(parsed.secret, row.secret_hash)) {
    throw new AuthenticationError('Invalid API key: no active key matches it (was it rotated?)');
  }
  if (row.revoked_at)
    throw new AuthenticationError('This API key has been revoked; create or use another key');
  if (row.expires_at && row.expires_at <= new Date()) {
    throw new AuthenticationError(
      `This API key expired on ${row.expires_at.toISOString()}; create a new key to continue`,
    );
  }
  return {
    key: {
      id: row.id,
      name: row.name,
      scope: row.scope,
      accountId: row.account_id,
      projectId: row.key_project_id,
    },
    project: row.project_id ? factsFromRow(row) : null,
  };
}
