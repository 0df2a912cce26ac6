import type { Kysely, Selectable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import { NotFoundError } from './errors.ts';
import { isUuid } from './ids.ts';

/** The tables whose rows belong to one project by `id` and `project_id`. */
type ProjectTable = {
  [T in keyof Database]: Database[T] extends { id: unknown; project_id: unknown } ? T : never;
}[keyof Database];

type Row<T extends ProjectTable> = Selectable<Database[T]>;

/**
 * One row of a project by id, with every column or the ones named. Another project's row, a row
 * that does not exist and an id that cannot be one are all the same 404 naming the resource
 * (never a 403 that would tell another project's ids apart).
 */
export async function findInProject<
  T extends ProjectTable,
  C extends keyof Row<T> & string = keyof Row<T> & string,
>(
  db: Db,
  table: T,
  noun: string,
  projectId: string,
  id: string,
  columns?: readonly C[],
): Promise<Pick<Row<T>, C>> {
  if (!isUuid(id)) throw new NotFoundError(noun);
  // the table is one of a closed set with `id` and `project_id`: Kysely cannot see that through a
  // generic table name, so the query is built untyped and its row typed by the table
  const query = (db as unknown as Kysely<any>)
    .selectFrom(table as string)
    .where('id', '=', id)
    .where('project_id', '=', projectId);
  const row = await (columns ? query.select(columns) : query.selectAll()).executeTakeFirst();
  if (!row) throw new NotFoundError(noun);
  return row as unknown as Pick<Row<T>, C>;
}

/**
 * Deletes a resource by id unless its status is `busy` (a sending campaign, an active flow), in one
 * statement, so a status change in between is seen. True when it was deleted.
 */
export async function deleteUnlessBusy(
  db: Db,
  table: 'campaigns' | 'flows',
  id: string,
  busy: 'sending' | 'active',
): Promise<boolean> {
  const deleted = await db
    .deleteFrom(table)
    .where('id', '=', id)
    .where('status', '!=', busy)
    .executeTakeFirst();
  return Number(deleted.numDeletedRows) > 0;
}
