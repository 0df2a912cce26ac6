import { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { ValidationError } from '../core/errors.ts';
import { checkProperties, contactEmail, optionalName, type PropertyValue } from './fields.ts';
import {
  type Column,
  detectDelimiter,
  planColumns,
  propertyName,
  recognisedColumns,
  targetOf,
} from './import-columns.ts';
import { LineCounter } from './import-upload.ts';

/**
 * Reading an import's file: the CSV header row (read at upload to check its columns, and again in
 * the job), its delimiter (comma, semicolon or tab, from the header line), and the rows of a CSV or
 * JSON upload, each checked as a contact or turned into an error with its line number.
 */

/** The first line of a CSV upload (a byte-order mark dropped) and the delimiter it uses. */
export function headerLineOf(csv: Buffer): { line: string; delimiter: ',' | ';' | '\t' } {
  const line = csv
    .subarray(0, 64 * 1024)
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .split(/\r?\n/)[0];
  return { line, delimiter: detectDelimiter(line) };
}

/** The header row of a CSV upload, read as its columns (a 400 when it cannot be read). */
export async function readCsvHeader(csv: Buffer): Promise<string[]> {
  const { line, delimiter } = headerLineOf(csv);
  return new Promise<string[]>((resolve, reject) =>
    parse(line, { to_line: 1, delimiter }, (err, rows: string[][]) =>
      err
        ? reject(
            new ValidationError(
              `The first row of the file, its column names, could not be read: ${err.message}`,
            ),
          )
        : resolve(rows[0] ?? []),
    ),
  );
}

/**
 * The start of a CSV file as a mapping step shows it: its delimiter, each column with what it
 * becomes when nothing is mapped, and its first rows (at most `limit`; a last line cut short by
 * the sample's end is left out).
 */
export async function previewCsv(sample: Buffer, limit = 5) {
  if (sample.length === 0) throw new ValidationError('The CSV file is empty');
  const { delimiter } = headerLineOf(sample);
  let text = sample.toString('utf8').replace(/^\uFEFF/, '');
  const lastBreak = text.lastIndexOf('\n');
  if (lastBreak > 0) text = text.slice(0, lastBreak + 1);
  const records = await new Promise<string[][]>((resolve, reject) =>
    parse(
      text,
      { delimiter, to_line: limit + 1, relax_column_count: true, relax_quotes: true, skip_empty_lines: true },
      (err, rows: string[][]) =>
        err
          ? reject(new ValidationError(`The start of the file could not be read: ${err.message}`))
          : resolve(rows),
    ),
  );
  const header = records[0] ?? [];
  const delimiterName = { ',': 'comma', ';': 'semicolon', '\t': 'tab' }[delimiter];
  return {
    object: 'import_preview' as const,
    delimiter: delimiterName,
    columns: recognisedColumns(header).map((c, i) => ({ name: header[i].trim(), target: targetOf(c) })),
    rows: records.slice(1, limit + 1),
  };
}

/** One row of the file as a contact: its fields checked, its other columns as properties. */
export interface CleanRow {
  email: string;
  first_name: string | null;
  last_name: string | null;
  subscribed: boolean | null;
  properties: Record<string, PropertyValue>;
}

const YES = new Set([
  'true',
  'yes',
  'y',
  '1',
  'subscribed',
  'active',
  'enabled',
  'confirmed',
  'opted in',
  'opt-in',
  'optin',
  'granted',
]);
const NO = new Set([
  'false',
  'no',
  'n',
  '0',
  'unsubscribed',
  'inactive',
  'disabled',
  'blocklisted',
  'blacklisted',
  'blocked',
  'cleaned',
  'bounced',
  'opted out',
  'opt-out',
  'optout',
  'withdrawn',
]);

function bool(value: string, field: string, column: string): boolean | null {
  const v = value.trim().toLowerCase();
  if (v === '') return null;
  if (YES.has(v)) return true;
  if (NO.has(v)) return false;
  // a column read as the subscription by its name ("Status") may mean something else
  const other =
    column === field
      ? ''
      : ` in the column "${column.slice(0, 60)}": map it to a property or skip it if it means something else`;
  throw new ValidationError(
    `${field} must be true or false (or subscribed, unsubscribed…), got "${value.slice(0, 30)}"${other}`,
  );
}

/** listmonk's attributes column: a JSON object, its values kept as properties. */
function attributes(cell: string, into: Record<string, PropertyValue>) {
  if (cell.trim() === '') return;
  let value: unknown;
  try {
    value = JSON.parse(cell);
  } catch {
    throw new ValidationError('attributes must be a JSON object');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new ValidationError('attributes must be a JSON object');
  for (const [k, v] of Object.entries(value)) {
    const key = propertyName(k);
    if (key === '' || v === null) continue;
    into[key] = typeof v === 'object' ? JSON.stringify(v) : (v as PropertyValue);
  }
}

function fromCsv(plan: Column[], names: string[], cells: string[]): CleanRow {
  if (cells.some((c) => c.includes('\u0000'))) throw new ValidationError('a cell contains a NUL character');
  if (cells.length !== plan.length)
    throw new ValidationError(`expected ${plan.length} columns, got ${cells.length}`);
  const row: CleanRow = { email: '', first_name: null, last_name: null, subscribed: null, properties: {} };
  const columns: Record<string, PropertyValue> = {};
  let fullName: string | null = null;
  plan.forEach((column, i) => {
    const cell = cells[i];
    if ('skip' in column) return;
    if ('property' in column) {
      if (cell !== '') columns[column.property] = cell;
      return;
    }
    const field = column.field;
    if (field === 'email') row.email = contactEmail(cell);
    else if (field === 'first_name' || field === 'last_name') row[field] = optionalName(cell, field) ?? null;
    else if (field === 'name') fullName = optionalName(cell, field) ?? null;
    else if (field === 'subscribed') row.subscribed = bool(cell, field, names[i]);
    else if (field === 'unsubscribed') {
      const unsubscribed = bool(cell, field, names[i]);
      row.subscribed = unsubscribed === null ? null : !unsubscribed;
    } else attributes(cell, row.properties);
  });
  Object.assign(row.properties, columns);
  // a full name fills the first and last names the file does not give apart
  if (fullName !== null && row.first_name === null && row.last_name === null) {
    const [first, ...rest] = (fullName as string).split(/\s+/);
    row.first_name = first;
    row.last_name = rest.length > 0 ? rest.join(' ') : null;
  }
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

/** The rows of a CSV upload as its non-empty lines after the header count them (null for JSON), capped at a million. */
export function rowsEstimate(row: { format: string; source: Buffer | null }): number | null {
  if (row.format !== 'csv' || !row.source) return null;
  const counter = new LineCounter();
  counter.add(row.source);
  return counter.rows(1_000_000);
}

/** The rows of an upload in file order, each a checked contact or the reason it is not one. */
export async function* rowsOf(
  row: { format: string; source: Buffer | null; mapping: Record<string, string> | null },
  // a CSV file's pieces when it is not in `source` (a file uploaded in pieces)
  pieces?: AsyncIterable<Buffer>,
): AsyncGenerator<{ line: number; row?: CleanRow; error?: string }> {
  if (row.format === 'json') {
    const items = JSON.parse((row.source as Buffer).toString('utf8')) as unknown[];
    for (let i = 0; i < items.length; i++) {
      try {
        yield { line: i + 1, row: fromJson(items[i]) };
      } catch (err) {
        yield { line: i + 1, error: (err as Error).message };
      }
    }
    return;
  }
  const source: AsyncIterable<Buffer> = row.source
    ? Readable.from([row.source])
    : (pieces as AsyncIterable<Buffer>);
  const iterator = source[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done) return;
  const { delimiter } = headerLineOf(first.value);
  async function* all() {
    yield first.value;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
  }
  const parser = Readable.from(all()).pipe(
    parse({ bom: true, delimiter, relax_column_count: true, skip_empty_lines: true, info: true }),
  );
  let header: Column[] | null = null;
  let names: string[] = [];
  for await (const record of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
    if (!header) {
      header = planColumns(record.record, row.mapping);
      names = record.record.map((n) => n.trim());
      continue;
    }
    const line = record.info.lines;
    try {
      yield { line, row: fromCsv(header, names, record.record) };
    } catch (err) {
      yield { line, error: (err as Error).message };
    }
  }
}
