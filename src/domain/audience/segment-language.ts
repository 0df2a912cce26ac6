import { type RawBuilder, sql } from 'kysely';
import { ValidationError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import { PROPERTY_KEY } from './fields.ts';

/**
 * The segment condition language. A definition is a group:
 *   {"all": [...]} or {"any": [...]}, whose items are conditions or nested groups.
 * Conditions:
 *   {"field": "email" | "first_name" | "last_name" | "subscribed" | "created_at" | "updated_at"
 *             | "properties.<name>", "op": <op>, "value": ...}
 *     ops: equals, not_equals, contains, not_contains, starts_with, exists, not_exists,
 *          gt, gte, lt, lte (numbers), before, after (dates), in, not_in (a list of values)
 *   {"list": "<list id>", "op": "member" | "not_member"}
 *   {"event": "<name>", "count"?: {"gte"?: n, "lte"?: n}, "within_days"?: d,
 *    "where"?: [{"property": "<name>", "op": <op>, "value": ...}]}
 *     performed at least `gte` (default 1) and at most `lte` times in the last d days;
 *     {"count": {"lte": 0}} means "never performed"
 *   {"revenue": {"gte"?: x, "lte"?: x}, "currency"?: "EUR", "event"?: "<name>", "within_days"?: d}
 *     total event value of the contact, each value counted to 4 decimal places (the finest minor
 *     unit of any ISO 4217 currency), exact for totals under 900 billion
 * Compiled to parameterised SQL: input never becomes SQL text. A definition made only of list and
 * event facts is a set of contact ids (counted without reading `contacts`); any other is one
 * condition over `contacts`.
 */
export type Op =
  | 'equals'
  | 'not_equals'
  | 'contains'
  | 'not_contains'
  | 'starts_with'
  | 'exists'
  | 'not_exists'
  | 'gt'
  | 'gte'
  | 'lt'
  | 'lte'
  | 'before'
  | 'after'
  | 'in'
  | 'not_in';

const OPS: Op[] = [
  'equals',
  'not_equals',
  'contains',
  'not_contains',
  'starts_with',
  'exists',
  'not_exists',
  'gt',
  'gte',
  'lt',
  'lte',
  'before',
  'after',
  'in',
  'not_in',
];
const TEXT_FIELDS = ['email', 'first_name', 'last_name'];
const DATE_FIELDS = ['created_at', 'updated_at'];
const MAX_DEPTH = 5;
const MAX_CONDITIONS = 50;
/**
 * The largest event count a condition may name: compared with SQL's `count(*)`, a bigint, and the
 * largest whole number a JSON number holds exactly (1e20 would overflow the bigint: a 500, not a 400).
 */
const MAX_COUNT = Number.MAX_SAFE_INTEGER;

/** A JSON number that parsed to Infinity (1e400) would compare as null: refused, like NaN. */
const finiteScalar = (v: unknown) =>
  typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));

type Scalar = string | number | boolean;
export type Condition =
  | { field: string; op: Op; value?: Scalar | Scalar[] }
  | { list: string; op: 'member' | 'not_member' }
  | {
      event: string;
      count?: { gte?: number; lte?: number };
      within_days?: number;
      where?: { property: string; op: Op; value?: Scalar | Scalar[] }[];
    }
  | { revenue: { gte?: number; lte?: number }; currency?: string; event?: string; within_days?: number };
export type Group = { all: (Condition | Group)[] } | { any: (Condition | Group)[] };
/** A definition as a request carries it: a group whose items `validateDefinition` has yet to check. */
export type DefinitionInput = { all?: object[]; any?: object[] };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function checkOpValue(op: unknown, value: unknown, at: string, kind: 'text' | 'date' | 'bool' | 'any'): Op {
  if (typeof op !== 'string' || !OPS.includes(op as Op))
    throw new ValidationError(
      `${at}: unknown operator "${String(op).slice(0, 40)}"; use one of ${OPS.join(', ')}`,
    );
  const o = op as Op;
  const need = (ok: boolean, what: string) => {
    if (!ok) throw new ValidationError(`${at}: "${o}" needs ${what}`);
  };
  if (kind === 'date' && o !== 'before' && o !== 'after')
    throw new ValidationError(`${at}: a date field takes before or after`);
  if (o === 'exists' || o === 'not_exists') return o;
  if (o === 'in' || o === 'not_in') {
    need(
      Array.isArray(value) && value.length > 0 && value.length <= 1000 && value.every(finiteScalar),
      'a `value` that is a non-empty list (at most 1,000) of strings, finite numbers or booleans',
    );
    return o;
  }
  if (o === 'gt' || o === 'gte' || o === 'lt' || o === 'lte')
    need(
      typeof value === 'number' && Number.isFinite(value) && kind !== 'text' && kind !== 'bool',
      'a number `value` (on a property)',
    );
  else if (o === 'before' || o === 'after')
    need(
      typeof value === 'string' && !Number.isNaN(Date.parse(value)) && /^\d{4}-\d{2}-\d{2}/.test(value),
      'an ISO 8601 date `value`',
    );
  else if (o === 'contains' || o === 'not_contains' || o === 'starts_with')
    need(
      typeof value === 'string' && value !== '' && kind !== 'bool' && kind !== 'date',
      'a non-empty string `value`',
    );
  else need(finiteScalar(value), 'a string, finite number or boolean `value`');
  if (kind === 'bool' && o !== 'equals' && o !== 'not_equals')
    need(false, 'equals or not_equals on `subscribed`');
  if (kind === 'date' && o !== 'before' && o !== 'after') need(false, 'before or after on a date field');
  return o;
}

/** Checks a definition; returns the list ids it names (they must exist in the project). */
export function validateDefinition(definition: unknown): { definition: Group; listIds: string[] } {
  const listIds: string[] = [];
  let count = 0;
  const group = (g: unknown, at: string, depth: number): void => {
    if (!isObject(g))
      throw new ValidationError(`${at} must be an object like {"all": [...]} or {"any": [...]}`);
    const keys = Object.keys(g);
    if (keys.length !== 1 || (keys[0] !== 'all' && keys[0] !== 'any'))
      throw new ValidationError(`${at} must have exactly one key, "all" or "any"`);
    if (depth > MAX_DEPTH) throw new ValidationError(`${at}: groups nest at most ${MAX_DEPTH} deep`);
    const items = g[keys[0]];
    if (!Array.isArray(items) || items.length === 0)
      throw new ValidationError(`${at}.${keys[0]} must be a non-empty array of conditions`);
    items.forEach((item, i) => {
      const here = `${at}.${keys[0]}[${i}]`;
      if (isObject(item) && ('all' in item || 'any' in item)) group(item, here, depth + 1);
      else condition(item, here);
    });
  };
  const condition = (c: unknown, at: string) => {
    if (++count > MAX_CONDITIONS)
      throw new ValidationError(`a segment has at most ${MAX_CONDITIONS} conditions`);
    if (!isObject(c)) throw new ValidationError(`${at} must be a condition object`);
    if ('field' in c) {
      const field = c.field;
      if (typeof field !== 'string') throw new ValidationError(`${at}.field must be a string`);
      if (field.startsWith('properties.')) {
        if (!PROPERTY_KEY.test(field.slice(11)))
          throw new ValidationError(`${at}.field: "${field.slice(0, 80)}" is not a valid property name`);
        checkOpValue(c.op, c.value, at, 'any');
      } else if (TEXT_FIELDS.includes(field)) checkOpValue(c.op, c.value, at, 'text');
      else if (DATE_FIELDS.includes(field)) checkOpValue(c.op, c.value, at, 'date');
      else if (field === 'subscribed') {
        checkOpValue(c.op, c.value, at, 'bool');
        if (typeof c.value !== 'boolean')
          throw new ValidationError(`${at}: \`subscribed\` compares with true or false`);
      } else
        throw new ValidationError(
          `${at}.field: unknown field "${field.slice(0, 60)}"; use email, first_name, last_name, subscribed, created_at, updated_at or properties.<name>`,
        );
    } else if ('list' in c) {
      if (typeof c.list !== 'string' || !isUuid(c.list))
        throw new ValidationError(`${at}.list must be a list id`);
      if (c.op !== 'member' && c.op !== 'not_member')
        throw new ValidationError(
          `${at}: unknown operator "${String(c.op).slice(0, 40)}" for a list; use member or not_member`,
        );
      listIds.push(c.list.toLowerCase());
    } else if ('revenue' in c) {
      range(c.revenue, `${at}.revenue`, false);
      if (c.revenue === undefined) throw new ValidationError(`${at}.revenue needs gte or lte`);
      if (c.currency !== undefined && (typeof c.currency !== 'string' || !/^[A-Z]{3}$/.test(c.currency)))
        throw new ValidationError(`${at}.currency must be an ISO 4217 code such as EUR`);
      if (c.event !== undefined && (typeof c.event !== 'string' || c.event === ''))
        throw new ValidationError(`${at}.event must be an event name`);
      days(c.within_days, at);
    } else if ('event' in c) {
      if (typeof c.event !== 'string' || c.event === '' || c.event.length > 200)
        throw new ValidationError(`${at}.event must be an event name`);
      range(c.count, `${at}.count`, true);
      days(c.within_days, at);
      if (c.where !== undefined) {
        if (!Array.isArray(c.where))
          throw new ValidationError(`${at}.where must be an array of property conditions`);
        c.where.forEach((w, i) => {
          if (!isObject(w) || typeof w.property !== 'string' || !PROPERTY_KEY.test(w.property))
            throw new ValidationError(`${at}.where[${i}] needs a valid \`property\` name`);
          checkOpValue(w.op, w.value, `${at}.where[${i}]`, 'any');
        });
      }
    } else {
      throw new ValidationError(
        `${at} must be a field, list, event or revenue condition (or an all/any group)`,
      );
    }
  };
  const range = (r: unknown, at: string, whole: boolean) => {
    if (r === undefined) return;
    if (!isObject(r) || Object.keys(r).length === 0 || Object.keys(r).some((k) => k !== 'gte' && k !== 'lte'))
      throw new ValidationError(`${at} must be an object with gte and/or lte`);
    for (const v of Object.values(r)) {
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || (whole && !Number.isInteger(v)))
        throw new ValidationError(`${at}: gte and lte must be ${whole ? 'whole ' : ''}numbers of 0 or more`);
      if (whole && v > MAX_COUNT)
        throw new ValidationError(`${at}: gte and lte must be whole numbers from 0 to ${MAX_COUNT}`);
    }
  };
  const days = (d: unknown, at: string) => {
    if (d !== undefined && (typeof d !== 'number' || !Number.isInteger(d) || d < 1 || d > 3650))
      throw new ValidationError(`${at}.within_days must be a whole number of days from 1 to 3650`);
  };
  group(definition, 'definition', 1);
  return { definition: definition as Group, listIds: [...new Set(listIds)] };
}

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
