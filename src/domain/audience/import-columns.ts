import { ValidationError } from '../core/errors.ts';
import { PROPERTY_KEY } from './fields.ts';

/**
 * What each column of an imported CSV file becomes, as people have their contacts: headers are
 * matched without regard to case, spaces, dashes, dots or underscores, with the names other tools
 * export (`Email Address`, `E-mail`, `FIRSTNAME`, `First Name`, …); any other column becomes a
 * property named after its header. A mapping given with the import decides for the columns it names.
 */

export const CONTACT_FIELDS = [
  'email',
  'first_name',
  'last_name',
  'name',
  'subscribed',
  'unsubscribed',
  'attributes',
] as const;
export type ContactField = (typeof CONTACT_FIELDS)[number];

export type Column = { field: ContactField } | { property: string } | { skip: true };

/** A header as compared: lower case, without spaces, dashes, dots or underscores. */
function squash(header: string): string {
  return header
    .trim()
    .toLowerCase()
    .replace(/[\s_\-.]+/g, '');
}

const ALIASES: Record<string, ContactField> = {};
const aliases = (field: ContactField, names: string[]) => {
  for (const n of names) ALIASES[squash(n)] = field;
};
aliases('email', ['email', 'e-mail', 'email address', 'e-mail address', 'mail', 'email id', 'contact email']);
aliases('first_name', ['first name', 'firstname', 'fname', 'given name', 'forename', 'first']);
aliases('last_name', ['last name', 'lastname', 'lname', 'surname', 'family name', 'last']);
aliases('name', ['name', 'full name', 'display name', 'contact name']);
aliases('subscribed', ['subscribed', 'status', 'subscription status', 'email status', 'opt in', 'consent']);
aliases('unsubscribed', [
  'unsubscribed',
  'email disabled',
  'opted out',
  'opt out',
  'blacklisted',
  'blocklisted',
]);
aliases('attributes', ['attributes', 'attribs']);

/** A property's name from a header: kept when it is one already, else lower_snake_case (may be ''). */
export function propertyName(header: string): string {
  const trimmed = header.trim();
  if (PROPERTY_KEY.test(trimmed)) return trimmed;
  return trimmed
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '_')
    .replace(/^[_-]+|[_-]+$/g, '')
    .slice(0, 64);
}

/** What a column becomes when the mapping does not name it. */
function recognised(header: string): Column {
  const field = ALIASES[squash(header)];
  if (field) return { field };
  const property = propertyName(header);
  return property === '' ? { skip: true } : { property };
}

const TARGET_HELP = `a contact field (${CONTACT_FIELDS.join(', ')}), "skip", or a property name (letters, digits, _ and -, at most 64)`;

/** A mapping's target as written: a field, `skip`, `property:<name>`, or a bare property name. */
function target(column: string, value: unknown): Column {
  if (typeof value !== 'string' || value.trim() === '')
    throw new ValidationError(`The mapping of "${column.slice(0, 60)}" must be ${TARGET_HELP}`);
  const v = value.trim();
  if (v === 'skip') return { skip: true };
  if ((CONTACT_FIELDS as readonly string[]).includes(v)) return { field: v as ContactField };
  const property = v.startsWith('property:') ? v.slice('property:'.length) : v;
  if (!PROPERTY_KEY.test(property))
    throw new ValidationError(`The mapping of "${column.slice(0, 60)}" must be ${TARGET_HELP}`);
  return { property };
}

/** A mapping as a request gives it: an object of column header to target, at most 500 columns. */
export function checkMapping(value: unknown): Record<string, string> | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value))
    throw new ValidationError(
      'The mapping must be an object of column header to target, e.g. {"Zip": "skip"}',
    );
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > 500) throw new ValidationError('The mapping may name at most 500 columns');
  for (const [column, v] of entries) target(column, v);
  return Object.fromEntries(entries) as Record<string, string>;
}

const quoted = (names: string[]) => names.map((n) => `"${n.slice(0, 60)}"`).join(', ');

/** The mapping's entry for a header: the same header, else the same once case and spacing are set aside. */
function mappedTarget(header: string, mapping: Record<string, string>): string | undefined {
  if (Object.hasOwn(mapping, header)) return mapping[header];
  const key = Object.keys(mapping).find((k) => squash(k) === squash(header) && squash(k) !== '');
  return key === undefined ? undefined : mapping[key];
}

function describe(c: Column): string {
  if ('field' in c) return c.field;
  if ('property' in c) return `the property ${c.property}`;
  return 'skip';
}

/**
 * Each header's column: a 400 when no column is the email address (naming the columns found), when
 * two columns would fill the same field or property, or when the mapping names a column the file lacks.
 */
export function planColumns(header: string[], mapping: Record<string, string> | null): Column[] {
  const names = header.map((h) => h.trim());
  if (mapping) {
    for (const column of Object.keys(mapping)) {
      if (!names.some((n) => n === column.trim() || squash(n) === squash(column)))
        throw new ValidationError(
          `The mapping names "${column.slice(0, 60)}", which is not a column of the file (its columns: ${quoted(names)})`,
        );
    }
  }
  const plan = names.map((n) => {
    const given = mapping ? mappedTarget(n, mapping) : undefined;
    return given === undefined ? recognised(n) : target(n, given);
  });
  if (!plan.some((c) => 'field' in c && c.field === 'email'))
    throw new ValidationError(
      `No column holds the email address. The file's columns are ${quoted(names)}: name the email column in the mapping`,
    );
  const seen = new Map<string, number>();
  plan.forEach((c, i) => {
    if ('skip' in c) return;
    const key = 'field' in c ? `field:${c.field}` : `property:${c.property}`;
    const first = seen.get(key);
    if (first !== undefined)
      throw new ValidationError(
        `The columns "${names[first].slice(0, 60)}" and "${names[i].slice(0, 60)}" both go to ${describe(c)}: skip one of them in the mapping`,
      );
    seen.set(key, i);
  });
  return plan;
}

/** What each header becomes when nothing is mapped (no check that one holds the address). */
export function recognisedColumns(header: string[]): Column[] {
  return header.map((h) => recognised(h.trim()));
}

/** The delimiter of a CSV file, from its header line: the most frequent of comma, semicolon and tab outside quotes. */
export function detectDelimiter(headerLine: string): ',' | ';' | '\t' {
  const counts = { ',': 0, ';': 0, '\t': 0 };
  let inQuotes = false;
  for (const ch of headerLine) {
    if (ch === '"') inQuotes = !inQuotes;
    else if (!inQuotes && (ch === ',' || ch === ';' || ch === '\t')) counts[ch]++;
  }
  if (counts[';'] > counts[','] && counts[';'] >= counts['\t']) return ';';
  if (counts['\t'] > counts[','] && counts['\t'] > counts[';']) return '\t';
  return ',';
}

/** A column's target as the mapping writes it: a field, `skip`, or `property:<name>`. */
export function targetOf(column: Column): string {
  if ('field' in column) return column.field;
  if ('property' in column) return `property:${column.property}`;
  return 'skip';
}
