import { type RawBuilder, sql } from 'kysely';
import type { Tx } from '../../db/database.ts';
import type { Group } from '../audience/segment-language.ts';
import { compileDefinition } from '../audience/segment-sql.ts';
import type { EventWhere } from './definition.ts';

/**
 * Flow conditions in the segment language, compiled by its one compiler (audience/segment-language.ts)
 * so a flow means exactly what a segment means. Two flow-specific needs are met without a second
 * compiler:
 *
 * - "this tracked event matches" (event triggers, wait_for_event): an event condition
 *   `{event, where}` evaluated with `events` narrowed to the rows in question. The narrowing is a
 *   CTE named `events`, which shadows the table for the compiled SQL (inside its own body, a
 *   non-recursive CTE's name still means the table).
 * - goals: the same narrowing to the events since the contact entered the flow, so a purchase made
 *   before the enrollment is no conversion.
 */

/** `{event, where}` as a segment-language group ("performed at least once"). */
export function eventGroup(event: string, where: EventWhere[]): Group {
  return { all: [{ event, ...(where.length > 0 ? { where } : {}) }] };
}

/** The condition over `contacts`, with `events` read from `narrowed` (a select of events rows). */
export function withEvents(narrowed: RawBuilder<unknown>, statement: RawBuilder<unknown>) {
  return sql`with events as (${narrowed}) ${statement}`;
}

/**
 * Which branch each contact takes at one branch step: the conditions evaluated together, one query
 * for every enrollment of the batch at that step (`contacts` as the transaction sees it, so a
 * contact update made earlier in the batch counts). Returns contact id → index of the first true
 * condition, or -1 for the default edge.
 */
export async function pickBranches(
  tx: Tx,
  projectId: string,
  conditions: Group[],
  contactIds: string[],
): Promise<Map<string, number>> {
  const columns = conditions.map(
    (c, i) => sql`coalesce(${compileDefinition(projectId, c)}, false) as ${sql.ref(`b${i}`)}`,
  );
  const { rows } = await sql<Record<string, unknown> & { id: string }>`
    select contacts.id, ${sql.join(columns)} from contacts
     where contacts.project_id = ${projectId} and contacts.id = any(${contactIds}::uuid[])`.execute(tx);
  const picked = new Map<string, number>();
  for (const row of rows)
    picked.set(
      row.id,
      conditions.findIndex((_, i) => row[`b${i}`] === true),
    );
  return picked;
}
