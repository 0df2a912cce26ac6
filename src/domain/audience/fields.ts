import { normalizeEmail } from '../core/addresses.ts';
import { parseIsoDate } from '../core/dates.ts';
import { ValidationError } from '../core/errors.ts';

export type PropertyValue = string | number | boolean;
export type Properties = Record<string, PropertyValue>;

export const PROPERTY_KEY = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$/;
const MAX_PROPERTIES = 100;
const MAX_STRING = 2000;

/** A contact's address as stored: validated, trimmed, lower case (so one address is one contact). */
export function contactEmail(value: unknown, field = 'email'): string {
  if (value === undefined || value === null || value === '')
    throw new ValidationError(`\`${field}\` is required: the contact's email address`);
  return normalizeEmail(value, field).toLowerCase();
}

export function optionalName(value: unknown, field: string): string | null | undefined {
  if (value === undefined) return undefined;
  if (value === null) return null;
  if (typeof value !== 'string') throw new ValidationError(`\`${field}\` must be a string`);
  if (value.length > 200) throw new ValidationError(`\`${field}\` must be at most 200 characters`);
  return value.trim() === '' ? null : value.trim();
}

/**
 * Free-form properties: an object of string, number or boolean values (a date is an ISO 8601
 * string). With `allowNull`, a null value removes the key (PATCH).
 */
export function checkProperties(
  value: unknown,
  field = 'properties',
  opts: { allowNull?: boolean } = {},
): Record<string, PropertyValue | null> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new ValidationError(`\`${field}\` must be an object of names to string, number or boolean values`);
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_PROPERTIES)
    throw new ValidationError(`\`${field}\` may have at most ${MAX_PROPERTIES} keys`);
  const out: Record<string, PropertyValue | null> = {};
  for (const [key, v] of entries) {
    if (!PROPERTY_KEY.test(key)) {
      throw new ValidationError(
        `\`${field}\`: "${key.slice(0, 70)}" is not a valid name (letters, digits, _ and -, at most 64)`,
      );
    }
    if (v === null && opts.allowNull) out[key] = null;
    else if (typeof v === 'string') {
      if (v.length > MAX_STRING)
        throw new ValidationError(`\`${field}.${key}\` must be at most ${MAX_STRING} characters`);
      out[key] = v;
    } else if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new ValidationError(`\`${field}.${key}\` must be a finite number`);
      out[key] = v;
    } else if (typeof v === 'boolean') out[key] = v;
    else {
      throw new ValidationError(
        `\`${field}.${key}\` must be a string, number or boolean${opts.allowNull ? ' (or null to remove it)' : ''}`,
      );
    }
  }
  return out;
}

/** `consent` as a request gives it: the status, and optionally where and how it was given. */
export interface ConsentRequest {
  status: 'granted' | 'withdrawn';
  source?: string | null;
  ip?: string | null;
  text?: string | null;
}

export interface ConsentInput {
  status: 'granted' | 'withdrawn';
  source: string | null;
  ip: string | null;
  text: string | null;
}

/** `consent`: {status: granted | withdrawn, source?, ip?, text?} — recorded as history, never overwritten. */
export function checkConsent(value: unknown): ConsentInput | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new ValidationError('`consent` must be an object: {status, source, ip, text}');
  const c = value as Record<string, unknown>;
  if (c.status !== 'granted' && c.status !== 'withdrawn')
    throw new ValidationError('`consent.status` must be "granted" or "withdrawn"');
  const text = (name: string, max: number) => {
    const v = c[name];
    if (v === undefined || v === null) return null;
    if (typeof v !== 'string') throw new ValidationError(`\`consent.${name}\` must be a string`);
    if (v.length > max) throw new ValidationError(`\`consent.${name}\` must be at most ${max} characters`);
    return v;
  };
  return { status: c.status, source: text('source', 200), ip: text('ip', 64), text: text('text', 5000) };
}

export function optionalBoolean(value: unknown, field: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw new ValidationError(`\`${field}\` must be true or false`);
  return value;
}

/** A list's or a segment's `name`: required, at most 200 characters. */
export function checkName(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '')
    throw new ValidationError('`name` is required and must be a non-empty string');
  if (value.length > 200) throw new ValidationError('`name` must be at most 200 characters');
  return value.trim();
}

/** An optional `description` (null clears it). */
export function checkDescription(value: unknown): string | null | undefined {
  if (value === undefined || value === null) return value as undefined | null;
  if (typeof value !== 'string' || value.length > 1000)
    throw new ValidationError('`description` must be a string of at most 1,000 characters');
  return value;
}

/** A date query parameter (`created_after`, `from`, ...): ISO 8601, date or date-time. */
export function dateParam(value: string | undefined, field: string): Date | undefined {
  if (value === undefined) return undefined;
  const d = parseIsoDate(value);
  if (!d)
    throw new ValidationError(
      `\`${field}\` must be an ISO 8601 date such as 2026-11-01 or 2026-11-01T09:00:00Z`,
    );
  return d;
}
