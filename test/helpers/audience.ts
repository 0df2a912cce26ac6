import { type Kysely, sql } from 'kysely';
import type { Database } from '../../src/db/schema.ts';

/**
 * Makes `count` contacts of a project in one statement, reader1@`domain` … with first names
 * Reader 1 …, and puts them on a list, subscribed: an audience too large to make through the API
 * in a test. Gives their addresses.
 */
export async function insertReaders(
  db: Kysely<Database>,
  { projectId, listId, count, domain }: { projectId: string; listId: string; count: number; domain: string },
): Promise<string[]> {
  await sql`with c as (
      insert into contacts (project_id, email, first_name)
      select ${projectId}::uuid, 'reader' || n || ${`@${domain}`}, 'Reader ' || n
        from generate_series(1, ${count}) n
      returning id)
    insert into list_members (list_id, contact_id, subscribed) select ${listId}::uuid, id, true from c`.execute(
    db,
  );
  return Array.from({ length: count }, (_, i) => `reader${i + 1}@${domain}`);
}
