import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { Db, Tx } from '../../db/database.ts';
import { ConflictError } from '../core/errors.ts';
import type { AcceptedEmail, AcceptResult } from './accept.ts';

/**
 * Idempotent sends (`Idempotency-Key`, 24 h): the answer a request was given is stored with its
 * messages, in the same transaction, and a retry of the same request gets it back before anything
 * else is done (no check, no fetch of an attachment); the same key with another request is 409.
 */

export interface Idempotency {
  key: string;
  /** Identifies the request: same key with another request is a conflict. */
  requestHash: Buffer;
}

/** The request's identity: its method and route (with any mode that changes its meaning) and its body. */
export function requestHash(path: string, body: unknown): Buffer {
  return createHash('sha256').update(path).update('\n').update(JSON.stringify(body)).digest();
}

const IDEMPOTENCY_TTL_MS = 86_400_000;
export const idempotencyCutoff = () => new Date(Date.now() - IDEMPOTENCY_TTL_MS);

/** The stored answer for a request's key: the replay for the same request, 409 for another one. */
function answerFromStored(
  stored: { request_hash: Buffer; response: unknown },
  idem: Idempotency,
): AcceptResult {
  if (!stored.request_hash.equals(idem.requestHash)) {
    throw new ConflictError(
      'This Idempotency-Key was already used with a different request; use a new key for a new request',
    );
  }
  // stored as answered: a batch's `{data: [...]}`, a single message's object
  const response = stored.response as { data?: AcceptedEmail[] } | AcceptedEmail;
  const emails =
    'data' in response && Array.isArray(response.data) ? response.data : [response as AcceptedEmail];
  return { kind: 'replay', emails, response: stored.response };
}

/**
 * The committed answer under this key (younger than 24 h), if any. Only committed keys are seen, and
 * a key commits together with its response; a request still in flight is caught by
 * `claimIdempotencyKey`.
 */
export async function storedResponse(
  db: Db,
  projectId: string,
  idem: Idempotency,
): Promise<AcceptResult | null> {
  const stored = await db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'response'])
    .where('project_id', '=', projectId)
    .where('key', '=', idem.key)
    .where('created_at', '>=', idempotencyCutoff())
    .where('response', 'is not', null)
    .executeTakeFirst();
  return stored ? answerFromStored(stored, idem) : null;
}

/**
 * Takes the idempotency key for this request. A concurrent request with the same key waits on the
 * unique index until the first commits, then replays its response.
 */
export async function claimIdempotencyKey(
  tx: Tx,
  projectId: string,
  idem: Idempotency,
): Promise<AcceptResult | null> {
  const inserted = await sql<{ key: string }>`
    insert into idempotency_keys (project_id, key, request_hash) values (${projectId}, ${idem.key}, ${idem.requestHash})
    on conflict do nothing returning key`.execute(tx);
  if (inserted.rows.length > 0) return null;
  const existing = await tx
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('key', '=', idem.key)
    .executeTakeFirstOrThrow();
  return answerFromStored(existing, idem);
}

/** Stores the answer under the key claimed, in the transaction that writes the messages. */
export async function storeAnswer(tx: Tx, projectId: string, idem: Idempotency, response: unknown) {
  await tx
    .updateTable('idempotency_keys')
    .set({ status_code: 200, response: JSON.stringify(response) })
    .where('project_id', '=', projectId)
    .where('key', '=', idem.key)
    .execute();
}

/** Forgets an expired answer under the key, so that the key may be used again. */
export async function dropExpiredKey(db: Db, projectId: string, idem: Idempotency) {
  await db
    .deleteFrom('idempotency_keys')
    .where('project_id', '=', projectId)
    .where('key', '=', idem.key)
    .where('created_at', '<', idempotencyCutoff())
    .execute();
}
