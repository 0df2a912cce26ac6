import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { ValidationError } from './errors.ts';
import { isUuid } from './ids.ts';

/**
 * Cursor pagination, newest first, as Resend's API pages (issue 35): `limit` items `after` an
 * item's id (older ones) or `before` one (newer ones), and whether more follow. Keyed on
 * (created_at, id), so a page never repeats or skips an item when others are added meanwhile.
 */

export interface Cursor {
  limit?: number;
  after?: string;
  before?: string;
}

export type PagedTable =
  | 'emails'
  | 'domains'
  | 'contacts'
  | 'lists'
  | 'campaigns'
  | 'webhook_endpoints'
  | 'api_keys'
  | 'templates'
  | 'imports'
  | 'flows'
  | 'flow_enrollments';

export async function keysetPage<Row extends { id: string; created_at: Date }>(
  db: Db,
  table: PagedTable,
  scope: RawBuilder<boolean>,
  cursor: Cursor,
): Promise<{ rows: Row[]; has_more: boolean }> {
  if (cursor.after !== undefined && cursor.before !== undefined)
    throw new ValidationError('Give `after` or `before`, not both');
  const limit = cursor.limit ?? 20;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100)
    throw new ValidationError('`limit` must be a whole number from 1 to 100');
  const anchorId = cursor.after ?? cursor.before;
  if (anchorId !== undefined) {
    const found = isUuid(anchorId)
      ? await sql`select 1 from ${sql.table(table)} where id = ${anchorId} and ${scope}`.execute(db)
      : { rows: [] };
    if (found.rows.length === 0)
      throw new ValidationError(
        `\`${cursor.after ? 'after' : 'before'}\` must be the id of an item of this list`,
      );
  }
  const newer = cursor.before !== undefined;
  // the anchor's created_at is read in the query, at PostgreSQL's microseconds: through a JavaScript
  // Date it would lose them, and items written in one batch (one created_at) would be skipped going
  // forward and the anchor itself returned going backward (issue 47)
  const anchor = sql`(select created_at, id from ${sql.table(table)} where id = ${anchorId ?? null})`;
  const beyond =
    anchorId === undefined
      ? sql``
      : newer
        ? sql`and (created_at, id) > ${anchor}`
        : sql`and (created_at, id) < ${anchor}`;
  const order = newer ? sql`created_at asc, id asc` : sql`created_at desc, id desc`;
  const found = await sql<Row>`
    select * from ${sql.table(table)} where ${scope} ${beyond} order by ${order} limit ${limit + 1}`.execute(
    db,
  );
  const rows = found.rows.slice(0, limit);
  return { rows: newer ? rows.reverse() : rows, has_more: found.rows.length > limit };
}
