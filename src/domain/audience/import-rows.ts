import { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { ValidationError } from '../core/errors.ts';
import { checkProperties, contactEmail, optionalName, PROPERTY_KEY, type PropertyValue } from './fields.ts';

/**
 * Reading an import's file: the CSV header's check (at upload and again in the job) and the rows of
 * a CSV or JSON upload, each checked as a contact or turned into an error with its line number.
 */

const FIELDS = new Set(['email', 'first_name', 'last_name', 'subscribed']);

/** The CSV header: `email` is required; first_name, last_name and subscribed are fields; the rest are properties. */
export function checkHeader(columns: string[]): string[] {
  const names = columns.map((c) => c.trim());
  if (!names.includes('email'))
    throw new ValidationError(
      'The CSV header row needs an `email` column (and optionally first_name, last_name, subscribed, properties)',
    );
  names.forEach((n) => {
    if (!FIELDS.has(n) && !PROPERTY_KEY.test(n))
      throw new ValidationError(
        `CSV column "${n.slice(0, 60)}" is not a valid property name (letters, digits, _ and -)`,
      );
  });
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup) throw new ValidationError(`CSV column "${dup}" appears twice`);
  return names;
}

/** The first line of a CSV upload, read as its header (a 400 when it cannot be read). */
export async function readCsvHeader(csv: Buffer): Promise<string[]> {
  const firstLine = csv
    .subarray(0, 64 * 1024)
    .toString('utf8')
    .split(/\r?\n/)[0];
  return new Promise<string[]>((resolve, reject) =>
    parse(firstLine, { to_line: 1, bom: true }, (err, rows: string[][]) =>
      err
        ? reject(new ValidationError(`The CSV header row could not be read: ${err.message}`))
        : resolve(rows[0] ?? []),
    ),
  );
}

/** One row of the file as a contact: its fields checked, its other columns as properties. */
export interface CleanRow {
  email: string;
  first_name: string | null;
  last_name: string | null;
  subscribed: boolean | null;
  properties: Record<string, PropertyValue>;
}

function bool(value: string): boolean | null {
  const v = value.trim().toLowerCase();
  if (v === '') return null;
  if (['true', 'yes', '1', 'y'].includes(v)) return true;
  if (['false', 'no', '0', 'n'].includes(v)) return false;
  throw new ValidationError(`subscribed must be true or false, got "${value.slice(0, 30)}"`);
}

function fromCsv(header: string[], cells: string[]): CleanRow {
  if (cells.some((c) => c.includes('\u0000'))) throw new ValidationError('a cell contains a NUL character');
  if (cells.length !== header.length)
    throw new ValidationError(`expected ${header.length} columns, got ${cells.length}`);
  const row: CleanRow = { email: '', first_name: null, last_name: null, subscribed: null, properties: {} };
  header.forEach((name, i) => {
    const cell = cells[i];
    if (name === 'email') row.email = contactEmail(cell);
    else if (name === 'first_name' || name === 'last_name') row[name] = optionalName(cell, name) ?? null;
    else if (name === 'subscribed') row.subscribed = bool(cell);
    else if (cell !== '') row.properties[name] = cell;
  });
  return row;
}

function fromJson(value: unknown): CleanRow {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new ValidationError('a row must be a contact object');
  const v = value as Record<string, unknown>;
  if (v.subscribed !== undefined && typeof v.subscribed !== 'boolean')
    throw new ValidationError('`subscribed` must be true or false');
  return {
    email: contactEmail(v.email),
    first_name: optionalName(v.first_name, 'first_name') ?? null,
    last_name: optionalName(v.last_name, 'last_name') ?? null,
    subscribed: (v.subscribed as boolean | undefined) ?? null,
    properties: checkProperties(v.properties) as Record<string, PropertyValue>,
  };
}

/** The rows of an upload in file order, each a checked contact or the reason it is not one. */
export async function* rowsOf(row: {
  format: string;
  source: Buffer | null;
}): AsyncGenerator<{ line: number; row?: CleanRow; error?: string }> {
  const source = row.source as Buffer;
  if (row.format === 'json') {
    const items = JSON.parse(source.toString('utf8')) as unknown[];
    for (let i = 0; i < items.length; i++) {
      try {
        yield { line: i + 1, row: fromJson(items[i]) };
      } catch (err) {
        yield { line: i + 1, error: (err as Error).message };
      }
    }
    return;
  }
  const parser = Readable.from([source]).pipe(
    parse({ bom: true, relax_column_count: true, skip_empty_lines: true, info: true }),
  );
  let header: string[] | null = null;
  for await (const record of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
    if (!header) {
      header = checkHeader(record.record);
      continue;
    }
    const line = record.info.lines;
    try {
      yield { line, row: fromCsv(header, record.record) };
    } catch (err) {
      yield { line, error: (err as Error).message };
    }
  }
}
