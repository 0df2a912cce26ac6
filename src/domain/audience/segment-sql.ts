import { type RawBuilder, sql } from 'kysely';
import type { Condition, Group, Op, Scalar } from './segment-language.ts';

/**
 * The segment language's compiler: a definition checked by `validateDefinition`
 * (segment-language.ts) becomes parameterised SQL, so input never becomes SQL text. A definition
 * made only of list and event facts is a set of contact ids (counted without reading `contacts`);
 * any other is one condition over `contacts`.
 */

const like = (v: string) => v.replace(/[\\%_]/g, '\\$&');

/** `op` applied to a text column, or to a jsonb value (`json`) for properties. */
function compare(
  column: RawBuilder<unknown>,
  json: RawBuilder<unknown> | null,
  op: Op,
  value: unknown,
): RawBuilder<boolean> {
  const text = json ? sql`(${json} #>> '{}')` : column;
  switch (op) {
    case 'exists':
      return json
        ? sql`(${json} is not null and ${json} <> 'null'::jsonb)`
        : sql`(${column} is not null and ${column} <> '')`;
    case 'not_exists':
      return sql`not ${compare(column, json, 'exists', value)}`;
    case 'equals':
      return json ? sql`(${json} = ${JSON.stringify(value)}::jsonb)` : sql`(${column} = ${String(value)})`;
    case 'not_equals':
      return sql`(not coalesce(${compare(column, json, 'equals', value)}, false))`;
    case 'contains':
      return sql`(${text} ilike ${`%${like(String(value))}%`})`;
    case 'not_contains':
      return sql`(not coalesce(${text} ilike ${`%${like(String(value))}%`}, false))`;
    case 'starts_with':
      return sql`(${text} ilike ${`${like(String(value))}%`})`;
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const symbol = sql.raw({ gt: '>', gte: '>=', lt: '<', lte: '<=' }[op]);
      const number = json
        ? sql`(case when jsonb_typeof(${json}) = 'number' then (${json})::numeric end)`
        : column;
      return sql`(${number} ${symbol} ${value as number})`;
    }
    case 'before':
    case 'after': {
      const symbol = sql.raw(op === 'before' ? '<' : '>');
      const date = json ? sql`posthorn_try_timestamptz(${text})` : column;
      return sql`(${date} ${symbol} ${new Date(value as string)})`;
    }
    case 'in':
    case 'not_in': {
      const values = value as Scalar[];
      const hit = json
        ? sql<boolean>`(${json} = any(${values.map((v) => JSON.stringify(v))}::jsonb[]))`
        : sql<boolean>`(${column} = any(${values.map(String)}::text[]))`;
      return op === 'in' ? hit : sql`(not coalesce(${hit}, false))`;
    }
  }
}

function fieldCondition(c: { field: string; op: Op; value?: unknown }): RawBuilder<boolean> {
  if (c.field.startsWith('properties.')) {
    const key = c.field.slice(11);
    // equality on a property uses the GIN index (containment)
    if (c.op === 'equals') return sql`(contacts.properties @> ${JSON.stringify({ [key]: c.value })}::jsonb)`;
    return compare(sql`null`, sql`(contacts.properties -> ${key})`, c.op, c.value);
  }
  const column = sql.ref(`contacts.${c.field}`);
  if (c.field === 'subscribed') {
    const hit = sql<boolean>`(${column} = ${c.value as boolean})`;
    return c.op === 'equals' ? hit : sql`(not ${hit})`;
  }
  const value = c.field === 'email' && typeof c.value === 'string' ? c.value.toLowerCase() : c.value;
  return compare(column, null, c.op, value);
}

function eventFilter(projectId: string, c: { event?: string; within_days?: number }) {
  const parts = [sql`e.project_id = ${projectId}`];
  if (c.event !== undefined) parts.push(sql`e.name = ${c.event}`);
  if (c.within_days !== undefined)
    parts.push(sql`e.created_at >= now() - make_interval(days => ${c.within_days})`);
  return parts;
}

/**
 * A condition compiled either to a SET of contact ids read from the tables that hold the facts
 * (list members, per-contact event aggregates: distinct ids, each a contact of the project) or to
 * a predicate over `contacts`. Sets combine without reading `contacts` at all, which is what makes
 * counting "bought for 150+ EUR or in the VIP list" cheap; a predicate uses `contacts.id in (set)`.
 */
type Compiled = { set: RawBuilder<unknown> } | { where: RawBuilder<boolean> };

const predicate = (c: Compiled): RawBuilder<boolean> =>
  'where' in c ? c.where : sql<boolean>`contacts.id in (${c.set})`;

/**
 * A contact's revenue in ten-thousandths of the currency unit: whole numbers, which double
 * precision adds exactly (below 2^53, i.e. sums under 900 billion units). Several times cheaper per
 * row than a numeric sum, whose per-contact state dominated revenue segments over 1M contacts.
 */
const REVENUE = sql`sum(round(e.value::float8 * 10000))`;
/**
 * A threshold in ten-thousandths: itself when it is on that grid (1.1 * 10000 is
 * 11000.000000000002 in binary floating point), else rounded outward, up for "at least" and down
 * for "at most", so a sum between two grid steps is never counted on the wrong side.
 */
function tenThousandths(amount: number, bound: 'gte' | 'lte'): number {
  const scaled = amount * 10_000;
  const nearest = Math.round(scaled);
  if (Math.abs(scaled - nearest) < 1e-6) return nearest;
  return bound === 'gte' ? Math.ceil(scaled) : Math.floor(scaled);
}

function condition(projectId: string, c: Condition): Compiled {
  if ('field' in c) return { where: fieldCondition(c) };
  if ('list' in c) {
    // the primary key (list_id, contact_id) makes the ids distinct
    const members = sql`select lm.contact_id from list_members lm where lm.list_id = ${c.list} and lm.subscribed`;
    return c.op === 'member' ? { set: members } : { where: sql`contacts.id not in (${members})` };
  }
  if ('topic' in c) {
    // as topics.ts defines it: subscribed to marketing, and opted in, or never chose and the default is opt_in
    const chose = (subscribed: boolean) =>
      sql`select ct.contact_id from contact_topics ct where ct.topic_id = ${c.topic} and ct.subscribed = ${subscribed}`;
    const gets = sql<boolean>`(contacts.subscribed and (contacts.id in (${chose(true)})
      or (exists (select 1 from topics t where t.id = ${c.topic} and t.default_subscription = 'opt_in')
          and contacts.id not in (${chose(false)}))))`;
    return { where: c.op === 'subscribed' ? gets : sql<boolean>`not ${gets}` };
  }
  if (!('revenue' in c)) {
    const parts = eventFilter(projectId, c);
    for (const w of c.where ?? []) {
      if (w.op === 'equals')
        parts.push(sql`e.properties @> ${JSON.stringify({ [w.property]: w.value })}::jsonb`);
      else parts.push(compare(sql`null`, sql`(e.properties -> ${w.property})`, w.op, w.value));
    }
    const where = sql.join(parts, sql` and `);
    const gte = c.count?.gte ?? (c.count?.lte !== undefined ? 0 : 1);
    const lte = c.count?.lte;
    const atLeast = sql`select e.contact_id from events e where ${where}
                        group by e.contact_id having count(*) >= ${gte}`;
    if (lte === undefined) return gte > 0 ? { set: atLeast } : { where: sql`true` };
    const over = sql`select e.contact_id from events e where ${where}
                     group by e.contact_id having count(*) > ${lte}`;
    const clauses: RawBuilder<boolean>[] = [sql`contacts.id not in (${over})`];
    if (gte > 0) clauses.unshift(sql`contacts.id in (${atLeast})`);
    return { where: sql`(${sql.join(clauses, sql` and `)})` };
  }
  const parts = [...eventFilter(projectId, c), sql`e.value is not null`];
  if (c.currency) parts.push(sql`e.currency = ${c.currency}`);
  const having: RawBuilder<boolean>[] = [];
  if (c.revenue.gte !== undefined) having.push(sql`${REVENUE} >= ${tenThousandths(c.revenue.gte, 'gte')}`);
  if (c.revenue.lte !== undefined) having.push(sql`${REVENUE} <= ${tenThousandths(c.revenue.lte, 'lte')}`);
  const sums = sql`select e.contact_id from events e where ${sql.join(parts, sql` and `)}
                   group by e.contact_id having ${sql.join(having, sql` and `)}`;
  // "at most X" also holds for contacts with no revenue at all
  if ((c.revenue.gte ?? 0) <= 0) {
    if (c.revenue.lte === undefined) return { where: sql`true` };
    const over = sql`select e.contact_id from events e where ${sql.join(parts, sql` and `)}
                     group by e.contact_id having ${REVENUE} > ${tenThousandths(c.revenue.lte, 'lte')}`;
    return { where: sql`contacts.id not in (${over})` };
  }
  return { set: sums };
}

function compileGroup(projectId: string, group: Group): Compiled {
  const [kind, items] = 'all' in group ? (['all', group.all] as const) : (['any', group.any] as const);
  const parts = items.map((item) =>
    'all' in item || 'any' in item
      ? compileGroup(projectId, item as Group)
      : condition(projectId, item as Condition),
  );
  if (parts.every((p) => 'set' in p)) {
    const sets = parts.map((p) => sql`(${(p as { set: RawBuilder<unknown> }).set})`);
    if (sets.length === 1) return parts[0];
    return { set: sql.join(sets, sql.raw(kind === 'all' ? ' intersect ' : ' union ')) };
  }
  return {
    where: sql<boolean>`(${sql.join(parts.map(predicate), sql.raw(kind === 'all' ? ' and ' : ' or '))})`,
  };
}

/** The definition as one SQL condition over `contacts` (the caller adds the project filter). */
export function compileDefinition(projectId: string, group: Group): RawBuilder<boolean> {
  return predicate(compileGroup(projectId, group));
}

/**
 * The number of contacts matching the definition, as one query: counted straight from the set of
 * ids when the definition is made of list and event facts only, else over `contacts`.
 */
export function compileCount(projectId: string, group: Group): RawBuilder<{ n: number }> {
  const compiled = compileGroup(projectId, group);
  if ('set' in compiled) return sql`select count(*) as n from (${compiled.set}) s`;
  return sql`select count(*) as n from contacts where contacts.project_id = ${projectId} and ${compiled.where}`;
}
