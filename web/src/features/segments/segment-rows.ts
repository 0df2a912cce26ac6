import type { Definition } from '../../api/audience.ts';

/**
 * The segment language (see GET /v1/openapi.json, SegmentDefinition) as rows a form can edit, and
 * back. Only what the builder can show faithfully becomes a row; anything else (revenue
 * conditions, event property filters, exact times) stays as written in a `raw` row, so opening and
 * saving a segment never changes what it means.
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

export const OP_LABELS: Record<Op, string> = {
  equals: 'is',
  not_equals: 'is not',
  contains: 'contains',
  not_contains: 'does not contain',
  starts_with: 'starts with',
  exists: 'is set',
  not_exists: 'is not set',
  gt: 'is greater than',
  gte: 'is at least',
  lt: 'is less than',
  lte: 'is at most',
  before: 'is before',
  after: 'is after',
  in: 'is one of',
  not_in: 'is none of',
};

export const FIELDS = [
  { value: 'email', label: 'Email' },
  { value: 'first_name', label: 'First name' },
  { value: 'last_name', label: 'Last name' },
  { value: 'subscribed', label: 'Subscribed to marketing' },
  { value: 'created_at', label: 'Created' },
  { value: 'updated_at', label: 'Updated' },
] as const;
export type FieldName = (typeof FIELDS)[number]['value'];

const TEXT_OPS: Op[] = [
  'equals',
  'not_equals',
  'contains',
  'not_contains',
  'starts_with',
  'exists',
  'not_exists',
  'in',
  'not_in',
];
const DATE_OPS: Op[] = ['before', 'after'];
const ALL_OPS = Object.keys(OP_LABELS) as Op[];

/** The operators the language allows on a field (`property` for `properties.<name>`). */
export function opsFor(field: FieldName | 'property'): Op[] {
  if (field === 'subscribed') return ['equals', 'not_equals'];
  if (field === 'created_at' || field === 'updated_at') return DATE_OPS;
  if (field === 'property') return ALL_OPS;
  return TEXT_OPS;
}

export type ValueType = 'text' | 'number' | 'boolean';
export type Times = 'at_least' | 'at_most' | 'never';

export type Row =
  | { kind: 'field'; key: number; field: FieldName; op: Op; value: string }
  | { kind: 'property'; key: number; property: string; op: Op; value: string; type: ValueType }
  | { kind: 'list'; key: number; list: string; op: 'member' | 'not_member' }
  | { kind: 'event'; key: number; event: string; times: Times; count: string; days: string }
  | { kind: 'group'; key: number; mode: 'all' | 'any'; items: Row[] }
  | { kind: 'raw'; key: number; json: object };
export type RowKind = Row['kind'];
export interface Group {
  mode: 'all' | 'any';
  items: Row[];
}

let nextKey = 1;
/** A fresh row of a kind, with sensible defaults. */
export function newRow(kind: Exclude<RowKind, 'raw'>, listId = ''): Row {
  const key = nextKey++;
  switch (kind) {
    case 'field':
      return { kind, key, field: 'email', op: 'contains', value: '' };
    case 'property':
      return { kind, key, property: '', op: 'equals', value: '', type: 'text' };
    case 'list':
      return { kind, key, list: listId, op: 'member' };
    case 'event':
      return { kind, key, event: '', times: 'at_least', count: '1', days: '' };
    case 'group':
      return { kind, key, mode: 'any', items: [newRow('field')] };
  }
}

/** Whether an operator takes no value, a list of values, or one. */
export function valueShape(op: Op): 'none' | 'many' | 'one' {
  if (op === 'exists' || op === 'not_exists') return 'none';
  return op === 'in' || op === 'not_in' ? 'many' : 'one';
}

type Converted = { ok: true; value: unknown } | { ok: false; problem: string };
const bad = (problem: string): Converted => ({ ok: false, problem });

function scalar(text: string, type: ValueType): Converted {
  const t = text.trim();
  if (t === '') return bad('a value is missing');
  if (type === 'number') {
    const n = Number(t);
    return Number.isFinite(n) ? { ok: true, value: n } : bad(`"${t}" is not a number`);
  }
  if (type === 'boolean') return { ok: true, value: t === 'true' };
  return { ok: true, value: t };
}

/** The `value` of a field or property condition, typed as the operator needs it. */
function conditionValue(op: Op, text: string, type: ValueType): Converted {
  const shape = valueShape(op);
  if (shape === 'none') return { ok: true, value: undefined };
  if (shape === 'many') {
    const parts = text.split(',').map((p) => p.trim());
    if (parts.every((p) => p === '')) return bad('a value is missing');
    const values = parts.filter((p) => p !== '').map((p) => scalar(p, type));
    const wrong = values.find((v) => !v.ok);
    return wrong ?? { ok: true, value: values.map((v) => (v.ok ? v.value : null)) };
  }
  if (op === 'gt' || op === 'gte' || op === 'lt' || op === 'lte') return scalar(text, 'number');
  if (op === 'before' || op === 'after')
    return /^\d{4}-\d{2}-\d{2}$/.test(text) ? { ok: true, value: text } : bad('a date is missing');
  if (op === 'contains' || op === 'not_contains' || op === 'starts_with') return scalar(text, 'text');
  return scalar(text, type);
}

function withValue(base: object, converted: Converted): object {
  if (!converted.ok) return base;
  return converted.value === undefined ? base : { ...base, value: converted.value };
}

function whole(text: string, min: number, max: number): number | null {
  const n = Number(text.trim());
  return text.trim() !== '' && Number.isInteger(n) && n >= min && n <= max ? n : null;
}

function eventCondition(row: Extract<Row, { kind: 'event' }>): object | string {
  if (row.event.trim() === '') return 'an event name is missing';
  const out: Record<string, unknown> = { event: row.event.trim() };
  if (row.times === 'never') out.count = { lte: 0 };
  else {
    const n = whole(row.count, 0, 1_000_000_000);
    if (n === null) return 'how many times is missing';
    out.count = row.times === 'at_least' ? { gte: n } : { lte: n };
  }
  if (row.days.trim() !== '') {
    const d = whole(row.days, 1, 3650);
    if (d === null) return 'the days must be a whole number from 1 to 3650';
    out.within_days = d;
  }
  return out;
}

/** One row as the API's condition, or the reason it is not complete yet. */
function toCondition(row: Row): object | string {
  switch (row.kind) {
    case 'raw':
      return row.json;
    case 'group':
      return toGroup(row);
    case 'list':
      return row.list ? { list: row.list, op: row.op } : 'choose a list';
    case 'event':
      return eventCondition(row);
    case 'field': {
      const type: ValueType = row.field === 'subscribed' ? 'boolean' : 'text';
      const v = conditionValue(row.op, row.value, type);
      return v.ok ? withValue({ field: row.field, op: row.op }, v) : v.problem;
    }
    case 'property': {
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(row.property.trim()))
        return 'a property name (letters, digits, _ and -) is missing';
      const v = conditionValue(row.op, row.value, row.type);
      return v.ok ? withValue({ field: `properties.${row.property.trim()}`, op: row.op }, v) : v.problem;
    }
  }
}

function toGroup(group: Group): object | string {
  if (group.items.length === 0) return 'a group has no conditions';
  const items: object[] = [];
  for (const row of group.items) {
    const c = toCondition(row);
    if (typeof c === 'string') return c;
    items.push(c);
  }
  return group.mode === 'all' ? { all: items } : { any: items };
}

/** The definition the rows describe, or why it is not complete yet (no call is made until it is). */
export function toDefinition(group: Group): { definition: Definition } | { problem: string } {
  const g = toGroup(group);
  return typeof g === 'string' ? { problem: g } : { definition: g as Definition };
}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const raw = (json: object): Row => ({ kind: 'raw', key: nextKey++, json });

function typeOf(value: unknown): ValueType {
  const first = Array.isArray(value) ? value[0] : value;
  return typeof first === 'number' ? 'number' : typeof first === 'boolean' ? 'boolean' : 'text';
}

function fromField(c: Json): Row {
  const field = String(c.field);
  const op = c.op as Op;
  const value = c.value;
  const text = Array.isArray(value) ? value.join(', ') : value === undefined ? '' : String(value);
  if (field.startsWith('properties.'))
    return {
      kind: 'property',
      key: nextKey++,
      property: field.slice(11),
      op,
      value: text,
      type: typeOf(value),
    };
  const known = FIELDS.some((f) => f.value === field);
  if (!known || ((op === 'before' || op === 'after') && !/^\d{4}-\d{2}-\d{2}$/.test(text))) return raw(c);
  return { kind: 'field', key: nextKey++, field: field as FieldName, op, value: text };
}

function fromEvent(c: Json): Row {
  const count = isObj(c.count) ? c.count : { gte: 1 };
  const keys = Object.keys(c).filter((k) => !['event', 'count', 'within_days'].includes(k));
  if (keys.length > 0 || Object.keys(count).length !== 1) return raw(c);
  const times: Times = count.lte === 0 ? 'never' : 'gte' in count ? 'at_least' : 'at_most';
  const n = count.gte ?? count.lte;
  const days = c.within_days === undefined ? '' : String(c.within_days);
  return { kind: 'event', key: nextKey++, event: String(c.event), times, count: String(n ?? 1), days };
}

function fromItem(c: unknown): Row {
  if (!isObj(c)) return raw({ value: c });
  if (Array.isArray(c.all) || Array.isArray(c.any))
    return { kind: 'group', key: nextKey++, ...fromDefinition(c) };
  if ('field' in c) return fromField(c);
  if ('list' in c && (c.op === 'member' || c.op === 'not_member'))
    return { kind: 'list', key: nextKey++, list: String(c.list), op: c.op };
  if ('event' in c && !('revenue' in c)) return fromEvent(c);
  return raw(c);
}

/** The rows of a saved definition. */
export function fromDefinition(definition: object): Group {
  const d = definition as { all?: unknown[]; any?: unknown[] };
  const mode = Array.isArray(d.any) ? 'any' : 'all';
  return { mode, items: (d[mode] ?? []).map(fromItem) };
}
