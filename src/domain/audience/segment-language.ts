import { parseIsoDate } from '../core/dates.ts';
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
 *   {"topic": "<topic id>", "op": "subscribed" | "not_subscribed"}
 *     subscribed: gets the topic's mail now (subscribed to marketing, and opted in, or never chose
 *     and the topic's default is opt_in)
 *   {"event": "<name>", "count"?: {"gte"?: n, "lte"?: n}, "within_days"?: d,
 *    "where"?: [{"property": "<name>", "op": <op>, "value": ...}]}
 *     performed at least `gte` (default 1) and at most `lte` times in the last d days;
 *     {"count": {"lte": 0}} means "never performed"
 *   {"revenue": {"gte"?: x, "lte"?: x}, "currency"?: "EUR", "event"?: "<name>", "within_days"?: d}
 *     total event value of the contact, each value counted to 4 decimal places (the finest minor
 *     unit of any ISO 4217 currency), exact for totals under 900 billion
 * This file reads and checks a definition (`validateDefinition`); `segment-sql.ts` compiles a checked
 * one to parameterised SQL.
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

export type Scalar = string | number | boolean;
export type Condition =
  | { field: string; op: Op; value?: Scalar | Scalar[] }
  | { list: string; op: 'member' | 'not_member' }
  | { topic: string; op: 'subscribed' | 'not_subscribed' }
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
  else if (o === 'before' || o === 'after') need(parseIsoDate(value) !== null, 'an ISO 8601 date `value`');
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

/** A list or topic condition's id, checked with its operator (the id must exist: the caller checks). */
function referenceOf(c: Record<string, unknown>, at: string, kind: 'list' | 'topic'): string {
  const ops = kind === 'list' ? ['member', 'not_member'] : ['subscribed', 'not_subscribed'];
  const id = c[kind];
  if (typeof id !== 'string' || !isUuid(id)) throw new ValidationError(`${at}.${kind} must be a ${kind} id`);
  if (typeof c.op !== 'string' || !ops.includes(c.op))
    throw new ValidationError(
      `${at}: unknown operator "${String(c.op).slice(0, 40)}" for a ${kind}; use ${ops[0]} or ${ops[1]}`,
    );
  return id.toLowerCase();
}

/** Checks a definition; returns the list and topic ids it names (they must exist in the project). */
export function validateDefinition(definition: unknown): {
  definition: Group;
  listIds: string[];
  topicIds: string[];
} {
  const listIds: string[] = [];
  const topicIds: string[] = [];
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
    } else if ('list' in c) listIds.push(referenceOf(c, at, 'list'));
    else if ('topic' in c) topicIds.push(referenceOf(c, at, 'topic'));
    else if ('revenue' in c) {
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
        `${at} must be a field, list, topic, event or revenue condition (or an all/any group)`,
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
  return {
    definition: definition as Group,
    listIds: [...new Set(listIds)],
    topicIds: [...new Set(topicIds)],
  };
}
