import { useQuery } from '@tanstack/react-query';
import { useId } from 'react';
import { listsQuery } from '../../api/audience.ts';
import { type Schemas, send } from '../../api/client.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { Section } from '../../components/Section.tsx';

/**
 * The mapping step of a contact import: the columns found at the start of the file with its first
 * rows, what each column becomes (a contact field, a property, or nothing), and the lists to add
 * the contacts to (chosen, or a new one named here).
 */

export type ImportPreview = Schemas['ContactImportPreview'];

/** The start of a file (its first 64 KB) as the server reads it: delimiter, columns, first rows. */
export async function previewFile(project: string, file: File): Promise<ImportPreview> {
  const res = await send('POST', '/v1/contacts/import/preview', {
    project,
    file: { content: file.slice(0, 64 * 1024), type: 'text/csv' },
    what: 'file',
  });
  return res.json();
}

const FIELDS: [string, string][] = [
  ['email', 'Email address'],
  ['first_name', 'First name'],
  ['last_name', 'Last name'],
  ['name', 'Full name (split into first and last)'],
  ['subscribed', 'Subscribed (yes or no)'],
  ['unsubscribed', 'Unsubscribed (yes or no)'],
  ['attributes', 'Attributes (a JSON object)'],
];

/** A property's name from a header, as the server makes it: kept when valid, else lower_snake_case. */
function propertyName(header: string): string {
  const trimmed = header.trim();
  if (/^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$/.test(trimmed)) return trimmed;
  return trimmed
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '_')
    .replace(/^[_-]+|[_-]+$/g, '')
    .slice(0, 64);
}

function ColumnChoice(props: { name: string; value: string; onChange(target: string): void }) {
  const property = propertyName(props.name);
  return (
    <select
      aria-label={`Column ${props.name || '(no name)'}`}
      value={props.value}
      onChange={(e) => props.onChange(e.target.value)}
    >
      {FIELDS.map(([value, label]) => (
        <option key={value} value={value}>
          {label}
        </option>
      ))}
      {property && <option value={`property:${property}`}>Property “{property}”</option>}
      <option value="skip">Leave out</option>
    </select>
  );
}

export interface MappingChoice {
  targets: string[];
  listIds: string[];
  newList: string;
}

export function ImportMapping(props: {
  project: string;
  preview: ImportPreview;
  choice: MappingChoice;
  onChange(choice: MappingChoice): void;
}) {
  const { preview, choice, onChange } = props;
  const id = useId();
  const lists = useQuery(listsQuery(props.project));
  const delimiter =
    { comma: 'commas', semicolon: 'semicolons', tab: 'tabs' }[preview.delimiter] ?? preview.delimiter;
  const setTarget = (i: number, target: string) =>
    onChange({ ...choice, targets: choice.targets.map((t, j) => (j === i ? target : t)) });
  return (
    <>
      <Section title="Columns">
        <p>
          {preview.columns.length} columns separated by {delimiter}. Choose what each column becomes; the
          first {preview.rows.length} rows are shown.
        </p>
        <div>
          <table className="table">
            <caption>Columns found in the file</caption>
            <thead>
              <tr>
                <th scope="col">Column</th>
                <th scope="col">Becomes</th>
                {preview.rows.map((_, r) => (
                  // biome-ignore lint/suspicious/noArrayIndexKey: rows and columns are positions in a file that does not change
                  <th scope="col" key={r}>
                    Row {r + 1}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {preview.columns.map((column, i) => (
                // biome-ignore lint/suspicious/noArrayIndexKey: rows and columns are positions in a file that does not change
                <tr key={i}>
                  <th scope="row">{column.name || '(no name)'}</th>
                  <td data-label="Becomes">
                    <ColumnChoice
                      name={column.name}
                      value={choice.targets[i]}
                      onChange={(t) => setTarget(i, t)}
                    />
                  </td>
                  {preview.rows.map((row, r) => (
                    // biome-ignore lint/suspicious/noArrayIndexKey: rows and columns are positions in a file that does not change
                    <td key={r} className="break" data-label={`Row ${r + 1}`}>
                      {row[i] ?? ''}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Section>
      <Section title="Lists">
        <Loaded query={lists} loading="Loading the lists…">
          {(data) => (
            <fieldset>
              <legend>Add the contacts to these lists</legend>
              {data.data.length === 0 && <p className="muted">No lists yet: name a new one below.</p>}
              {data.data.map((list: Schemas['ContactList']) => (
                <label key={list.id} className="radio">
                  <input
                    type="checkbox"
                    checked={choice.listIds.includes(list.id)}
                    onChange={(e) =>
                      onChange({
                        ...choice,
                        listIds: e.target.checked
                          ? [...choice.listIds, list.id]
                          : choice.listIds.filter((l) => l !== list.id),
                      })
                    }
                  />{' '}
                  {list.name}
                </label>
              ))}
            </fieldset>
          )}
        </Loaded>
        <div className="field">
          <label htmlFor={`${id}-new`}>New list</label>
          <input
            id={`${id}-new`}
            value={choice.newList}
            maxLength={200}
            onChange={(e) => onChange({ ...choice, newList: e.target.value })}
            aria-describedby={`${id}-new-hint`}
          />
          <p className="hint" id={`${id}-new-hint`}>
            Optional: a list created with this name when the import starts, holding every imported contact.
          </p>
        </div>
      </Section>
    </>
  );
}
