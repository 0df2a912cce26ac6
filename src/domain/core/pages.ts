import type { SelectQueryBuilder } from 'kysely';

/** Which part of a paginated list is asked for (`?limit&offset`). */
export interface Page {
  limit: number;
  offset: number;
}

/**
 * One page of a list: the rows that `select` reads from `base` (it orders them; the page's limit
 * and offset are applied here) and how many rows `base` holds, read at once.
 */
export async function readPage<DB, TB extends keyof DB, O>(
  base: SelectQueryBuilder<DB, TB, object>,
  select: (base: SelectQueryBuilder<DB, TB, object>) => SelectQueryBuilder<DB, TB, O>,
  page: Page,
): Promise<{ rows: O[]; total: number; limit: number; offset: number }> {
  const [rows, total] = await Promise.all([
    select(base).limit(page.limit).offset(page.offset).execute(),
    // Kysely cannot see the count's column through a generic table: it is named here
    base
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .$castTo<{ n: number }>()
      .executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(total.n), limit: page.limit, offset: page.offset };
}
