import { useRef } from 'react';
import type { ContactList } from '../../api/audience.ts';
import { Field, SelectField } from '../../components/Field.tsx';
import {
  FIELDS,
  type FieldName,
  type Group,
  newRow,
  OP_LABELS,
  type Op,
  opsFor,
  type Row,
  type RowKind,
  valueShape,
} from './segment-rows.ts';

/** The condition builder of the segment editor: all/any groups of field, property, list and event rows. */

const MAX_DEPTH = 3;
const KINDS: { value: Exclude<RowKind, 'raw' | 'group'>; label: string }[] = [
  { value: 'field', label: 'Contact field' },
  { value: 'property', label: 'Property' },
  { value: 'list', label: 'List membership' },
  { value: 'event', label: 'Event' },
];
const opOptions = (ops: Op[]) => ops.map((op) => ({ value: op, label: OP_LABELS[op] }));

/** A value input that fits the operator: none, a date, a yes/no choice, or text. */
function ValueInput({
  op,
  value,
  boolean,
  onChange,
}: {
  op: Op;
  value: string;
  boolean: boolean;
  onChange(value: string): void;
}) {
  const shape = valueShape(op);
  if (shape === 'none') return null;
  if (boolean && shape === 'one')
    return (
      <SelectField
        label="Value"
        value={value}
        onChange={onChange}
        options={[
          { value: 'true', label: 'yes (true)' },
          { value: 'false', label: 'no (false)' },
        ]}
      />
    );
  const date = op === 'before' || op === 'after';
  const number = op === 'gt' || op === 'gte' || op === 'lt' || op === 'lte';
  return (
    <Field
      label={shape === 'many' ? 'Values (comma separated)' : 'Value'}
      type={date ? 'date' : number ? 'number' : 'text'}
      step={number ? 'any' : undefined}
      value={value}
      onChange={(e) => onChange(e.target.value)}
    />
  );
}

type Change = (row: Row) => void;

function FieldCondition({ row, onChange }: { row: Extract<Row, { kind: 'field' }>; onChange: Change }) {
  const setField = (field: string) => {
    const f = field as FieldName;
    const ops = opsFor(f);
    const op = ops.includes(row.op) ? row.op : ops[0];
    onChange({ ...row, field: f, op, value: f === 'subscribed' ? 'true' : '' });
  };
  return (
    <>
      <SelectField label="Field" value={row.field} onChange={setField} options={[...FIELDS]} />
      <SelectField
        label="Operator"
        value={row.op}
        onChange={(op) => onChange({ ...row, op })}
        options={opOptions(opsFor(row.field))}
      />
      <ValueInput
        op={row.op}
        value={row.value}
        boolean={row.field === 'subscribed'}
        onChange={(value) => onChange({ ...row, value })}
      />
    </>
  );
}

function PropertyCondition({ row, onChange }: { row: Extract<Row, { kind: 'property' }>; onChange: Change }) {
  const typed = row.op === 'equals' || row.op === 'not_equals' || row.op === 'in' || row.op === 'not_in';
  return (
    <>
      <Field
        label="Property"
        value={row.property}
        placeholder="plan"
        onChange={(e) => onChange({ ...row, property: e.target.value })}
      />
      <SelectField
        label="Operator"
        value={row.op}
        onChange={(op) => onChange({ ...row, op })}
        options={opOptions(opsFor('property'))}
      />
      {typed && (
        <SelectField
          label="Value type"
          value={row.type}
          onChange={(type) =>
            onChange({
              ...row,
              type: type as typeof row.type,
              value: type === 'boolean' ? 'true' : row.value,
            })
          }
          options={[
            { value: 'text', label: 'text' },
            { value: 'number', label: 'number' },
            { value: 'boolean', label: 'yes or no' },
          ]}
        />
      )}
      <ValueInput
        op={row.op}
        value={row.value}
        boolean={typed && row.type === 'boolean'}
        onChange={(value) => onChange({ ...row, value })}
      />
    </>
  );
}

function ListCondition({
  row,
  onChange,
  lists,
}: {
  row: Extract<Row, { kind: 'list' }>;
  onChange: Change;
  lists: ContactList[];
}) {
  const known = lists.some((l) => l.id === row.list);
  const options = [
    ...(known ? [] : [{ value: row.list, label: row.list ? 'a list that is gone' : 'Choose a list' }]),
    ...lists.map((l) => ({ value: l.id, label: l.name })),
  ];
  return (
    <>
      <SelectField
        label="Membership"
        value={row.op}
        onChange={(op) => onChange({ ...row, op })}
        options={[
          { value: 'member', label: 'is a member of' },
          { value: 'not_member', label: 'is not a member of' },
        ]}
      />
      <SelectField
        label="List"
        value={row.list}
        onChange={(list) => onChange({ ...row, list })}
        options={options}
      />
    </>
  );
}

function EventCondition({ row, onChange }: { row: Extract<Row, { kind: 'event' }>; onChange: Change }) {
  return (
    <>
      <Field
        label="Event name"
        value={row.event}
        placeholder="purchase"
        onChange={(e) => onChange({ ...row, event: e.target.value })}
      />
      <SelectField
        label="How often"
        value={row.times}
        onChange={(times) => onChange({ ...row, times })}
        options={[
          { value: 'at_least', label: 'at least' },
          { value: 'at_most', label: 'at most' },
          { value: 'never', label: 'never' },
        ]}
      />
      {row.times !== 'never' && (
        <Field
          label="Times"
          type="number"
          min={0}
          value={row.count}
          onChange={(e) => onChange({ ...row, count: e.target.value })}
        />
      )}
      <Field
        label="In the last (days)"
        type="number"
        min={1}
        max={3650}
        placeholder="ever"
        value={row.days}
        onChange={(e) => onChange({ ...row, days: e.target.value })}
      />
    </>
  );
}

interface RowProps {
  row: Row;
  name: string;
  depth: number;
  lists: ContactList[];
  onChange: Change;
  onRemove(): void;
}

function ConditionBody(props: RowProps) {
  const { row, depth, lists, onChange } = props;
  switch (row.kind) {
    case 'field':
      return <FieldCondition row={row} onChange={onChange} />;
    case 'property':
      return <PropertyCondition row={row} onChange={onChange} />;
    case 'list':
      return <ListCondition row={row} onChange={onChange} lists={lists} />;
    case 'event':
      return <EventCondition row={row} onChange={onChange} />;
    case 'raw':
      return (
        <p className="condition-raw">
          Kept as written: <code>{JSON.stringify(row.json)}</code>
        </p>
      );
    case 'group':
      return (
        <GroupEditor
          group={row}
          depth={depth + 1}
          path={`${props.name.replace(/^Group /, '')}.`}
          lists={lists}
          onChange={(g) => onChange({ ...row, ...g })}
        />
      );
  }
}

function ConditionRow(props: RowProps) {
  const { row, name, lists, onChange, onRemove } = props;
  // the same key: the row stays in place, and the keyboard focus stays on this select
  const changeKind = (kind: Exclude<RowKind, 'raw' | 'group'>) =>
    onChange({ ...newRow(kind, lists[0]?.id), key: row.key });
  return (
    <fieldset className={row.kind === 'group' ? 'condition condition-group' : 'condition'}>
      <legend>{name}</legend>
      <div className="condition-fields">
        {row.kind !== 'group' && row.kind !== 'raw' && (
          <SelectField label="Type" value={row.kind} onChange={changeKind} options={KINDS} />
        )}
        <ConditionBody {...props} />
      </div>
      <button type="button" className="btn danger condition-remove" onClick={onRemove}>
        {row.kind === 'group' ? (
          <>
            Remove group<span className="visually-hidden"> {name.replace(/^Group /, '')}</span>
          </>
        ) : (
          <>
            Remove<span className="visually-hidden"> {name.toLowerCase()}</span>
          </>
        )}
      </button>
    </fieldset>
  );
}

/**
 * An all/any group: its match mode, its rows (conditions and nested groups), and buttons to add
 * more. `path` numbers the rows of a nested group after it ("Condition 3.1" in "Group 3").
 */
export function GroupEditor({
  group,
  depth,
  path,
  lists,
  onChange,
}: {
  group: Group;
  depth: number;
  path: string;
  lists: ContactList[];
  onChange(group: Group): void;
}) {
  const setItems = (items: Row[]) => onChange({ ...group, items });
  // a removed row takes its focused Remove button with it: the focus goes on to this group's Add button
  const addButton = useRef<HTMLButtonElement>(null);
  return (
    <div className="group-editor">
      <SelectField
        label={depth === 1 ? 'Contacts match' : 'This group matches'}
        value={group.mode}
        onChange={(mode) => onChange({ ...group, mode })}
        options={[
          { value: 'all', label: 'all of these conditions' },
          { value: 'any', label: 'any of these conditions' },
        ]}
      />
      {group.items.map((row, i) => (
        <ConditionRow
          key={row.key}
          row={row}
          name={`${row.kind === 'group' ? 'Group' : 'Condition'} ${path}${i + 1}`}
          depth={depth}
          lists={lists}
          onChange={(next) => setItems(group.items.map((r) => (r.key === row.key ? next : r)))}
          onRemove={() => {
            addButton.current?.focus();
            setItems(group.items.filter((r) => r.key !== row.key));
          }}
        />
      ))}
      <div className="actions">
        <button
          type="button"
          className="btn"
          ref={addButton}
          onClick={() => setItems([...group.items, newRow('field')])}
        >
          Add condition{depth > 1 && <span className="visually-hidden"> to this group</span>}
        </button>
        {depth < MAX_DEPTH && (
          <button type="button" className="btn" onClick={() => setItems([...group.items, newRow('group')])}>
            Add group{depth > 1 && <span className="visually-hidden"> inside this group</span>}
          </button>
        )}
      </div>
    </div>
  );
}
