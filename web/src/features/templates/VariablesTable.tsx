import { useEffect, useId, useRef } from 'react';
import {
  newVariableRow,
  VARIABLE_TYPES,
  type VariableField,
  type VariableRow,
  type VariableType,
} from './variable-rows.ts';

/** What the API said is wrong with one field of one row. */
export interface VariableError {
  key: number;
  field: VariableField;
  message: string;
}

const EXAMPLES: Record<VariableType, string> = {
  string: 'text',
  number: '42',
  boolean: 'true or false',
  date: '2025-01-31',
};

/** The props of an input in the table: its name for screen readers, and the error tied to it. */
function fieldProps(label: string, errorId: string | undefined) {
  return {
    'aria-label': label,
    'aria-invalid': errorId ? true : undefined,
    'aria-describedby': errorId,
  } as const;
}

function FieldError({ id, message }: { id: string; message: string }) {
  return (
    <p className="field-error" id={id} role="alert">
      {message}
    </p>
  );
}

function Row({
  row,
  index,
  error,
  set,
  remove,
}: {
  row: VariableRow;
  index: number;
  error: VariableError | null;
  set(patch: Partial<VariableRow>): void;
  remove(): void;
}) {
  const id = useId();
  const errorId = (field: VariableField) => (error?.field === field ? `${id}-${field}-error` : undefined);
  const of = `variable ${index + 1}`;
  const errorOf = (field: VariableField) =>
    error?.field === field && <FieldError id={`${id}-${field}-error`} message={error.message} />;
  const booleanChoice = (value: string, onChange: (value: string) => void, label: string, blank?: string) => (
    <select value={value} onChange={(e) => onChange(e.target.value)} {...fieldProps(label, undefined)}>
      {blank !== undefined && <option value="">{blank}</option>}
      <option value="true">true</option>
      <option value="false">false</option>
    </select>
  );
  return (
    <tr>
      <td data-label="Name">
        <input
          value={row.name}
          maxLength={64}
          spellCheck={false}
          autoComplete="off"
          placeholder="first_name"
          onChange={(e) => set({ name: e.target.value })}
          {...fieldProps(`Name of ${of}`, errorId('name'))}
        />
        {errorOf('name')}
      </td>
      <td data-label="Type">
        <select
          value={row.type}
          onChange={(e) => set({ type: e.target.value as VariableType })}
          {...fieldProps(`Type of ${of}`, errorId('type'))}
        >
          {VARIABLE_TYPES.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
        {errorOf('type')}
      </td>
      <td data-label="Required">
        <input
          type="checkbox"
          checked={row.required}
          onChange={(e) => set({ required: e.target.checked })}
          aria-label={`${of} is required`}
        />
      </td>
      <td data-label="Default">
        {row.required ? (
          <span className="muted">none: every send gives it</span>
        ) : row.type === 'boolean' ? (
          booleanChoice(
            row.default === 'true' ? 'true' : 'false',
            (v) => set({ default: v }),
            `Default of ${of}`,
          )
        ) : (
          <input
            value={row.default}
            inputMode={row.type === 'number' ? 'decimal' : undefined}
            placeholder={EXAMPLES[row.type]}
            onChange={(e) => set({ default: e.target.value })}
            {...fieldProps(`Default of ${of}`, errorId('default'))}
          />
        )}
        {errorOf('default')}
      </td>
      <td data-label="Preview value">
        {row.type === 'boolean' ? (
          booleanChoice(row.sample, (v) => set({ sample: v }), `Preview value of ${of}`, 'as declared')
        ) : (
          <input
            value={row.sample}
            inputMode={row.type === 'number' ? 'decimal' : undefined}
            placeholder={row.required ? EXAMPLES[row.type] : 'the default'}
            onChange={(e) => set({ sample: e.target.value })}
            aria-label={`Preview value of ${of}`}
          />
        )}
      </td>
      <td>
        <button type="button" className="btn" onClick={remove} aria-label={`Remove ${of}`}>
          Remove
        </button>
      </td>
    </tr>
  );
}

/**
 * The variables a template declares, as a table to edit: name, type, required (no default) or a
 * default, and a value for the preview. Rows are added and removed here; the editor saves the
 * declaration with the draft, and an error the API gives about a variable shows beside its field.
 */
export function VariablesTable({
  rows,
  onChange,
  error,
}: {
  rows: VariableRow[];
  onChange(rows: VariableRow[]): void;
  error: VariableError | null;
}) {
  const body = useRef<HTMLTableSectionElement>(null);
  const added = useRef(false);
  useEffect(() => {
    // a row just added: its name is what to type next
    if (!added.current) return;
    added.current = false;
    body.current?.querySelector<HTMLInputElement>('tr:last-child input')?.focus();
  });
  const set = (key: number, patch: Partial<VariableRow>) =>
    onChange(rows.map((r) => (r.key === key ? { ...r, ...patch } : r)));
  return (
    <section className="template-variables" aria-labelledby="variables-heading">
      <h2 id="variables-heading">Variables</h2>
      <p className="muted small">
        The names {'{{ name }}'} reads in the subject and MJML. A required variable has no default: every send
        gives it. Preview values feed the preview and test sends only; they are not saved.
      </p>
      {rows.length > 0 ? (
        <table className="table variables-table">
          <caption className="visually-hidden">Declared variables</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Type</th>
              <th scope="col">Required</th>
              <th scope="col">Default</th>
              <th scope="col">Preview value</th>
              <th scope="col">
                <span className="visually-hidden">Remove</span>
              </th>
            </tr>
          </thead>
          <tbody ref={body}>
            {rows.map((row, i) => (
              <Row
                key={row.key}
                row={row}
                index={i}
                error={error?.key === row.key ? error : null}
                set={(patch) => set(row.key, patch)}
                remove={() => onChange(rows.filter((r) => r.key !== row.key))}
              />
            ))}
          </tbody>
        </table>
      ) : (
        <p>No variables declared.</p>
      )}
      <div className="actions">
        <button
          type="button"
          className="btn"
          onClick={() => {
            added.current = true;
            onChange([...rows, newVariableRow()]);
          }}
        >
          Add a variable
        </button>
      </div>
    </section>
  );
}
