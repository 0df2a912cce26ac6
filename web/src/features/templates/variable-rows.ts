import { sampleVariables, type TemplateVariable } from '../../api/templates.ts';

/**
 * The template editor's variables as editable rows: text as typed, turned into the API's
 * declaration (`variables` of PATCH /v1/templates/{id}) when saved. The API checks every rule and
 * names the variable at fault (`variables[2]`.name ...): that message is shown beside the field.
 */

export type VariableType = TemplateVariable['type'];
export type Value = string | number | boolean;
export const VARIABLE_TYPES: readonly VariableType[] = ['string', 'number', 'boolean', 'date'];

/** One variable as typed. `required` means no default: every send must give a value. */
export interface VariableRow {
  /** Stable across edits, for React and to find the row an error names. */
  key: number;
  name: string;
  type: VariableType;
  required: boolean;
  default: string;
  /** A value for the preview and test sends only; not saved. */
  sample: string;
}

/** The field of a row an API error is about. */
export type VariableField = 'name' | 'type' | 'default';

let lastKey = 0;

export function newVariableRow(): VariableRow {
  lastKey += 1;
  return { key: lastKey, name: '', type: 'string', required: true, default: '', sample: '' };
}

export function rowsOf(variables: TemplateVariable[]): VariableRow[] {
  return variables.map((v) => ({
    ...newVariableRow(),
    name: v.name,
    type: v.type,
    required: v.default === undefined,
    default: v.default === undefined ? '' : String(v.default),
  }));
}

/** Typed text as the API takes the type: a number or true/false where the text is one, else the text as it is. */
function typedValue(type: VariableType, text: string): Value {
  if (type === 'number' && text.trim() !== '' && Number.isFinite(Number(text))) return Number(text);
  if (type === 'boolean') return text === 'true';
  return text;
}

/**
 * The declaration to save and, for each variable in it, the key of its row. A row without a name
 * is one being added: it is saved once it has one.
 */
export function declarationOf(rows: VariableRow[]): { variables: TemplateVariable[]; keys: number[] } {
  const named = rows.filter((r) => r.name.trim() !== '');
  return {
    variables: named.map((r) => ({
      name: r.name.trim(),
      type: r.type,
      ...(r.required ? {} : { default: typedValue(r.type, r.default) }),
    })),
    keys: named.map((r) => r.key),
  };
}

/**
 * The values a preview or a test send uses: each row's preview value where one is typed, and a
 * value of its type for a required variable without one (a default fills the others).
 */
export function previewValues(rows: VariableRow[]): Record<string, Value> {
  const values: Record<string, Value> = sampleVariables(declarationOf(rows).variables);
  for (const r of rows) {
    if (r.name.trim() === '' || r.sample === '') continue;
    values[r.name.trim()] = typedValue(r.type, r.sample);
  }
  return values;
}

/** The row and field an API message names (`variables[2]`.default ...), by the keys of the rows sent. */
export function variableAt(message: string, keys: number[]): { key: number; field: VariableField } | null {
  const m = /`variables\[(\d+)\]`(?:\.(name|type|default))?/.exec(message);
  const key = m ? keys[Number(m[1])] : undefined;
  if (!m || key === undefined) return null;
  return { key, field: (m[2] as VariableField | undefined) ?? 'name' };
}
