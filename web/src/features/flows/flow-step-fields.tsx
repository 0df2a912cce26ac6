import { useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import type { ContactList } from '../../api/audience.ts';
import type { Condition, FlowStep } from '../../api/flows.ts';
import { templatesQuery } from '../../api/templates.ts';
import { topicsQuery } from '../../api/topics.ts';
import { Field, SelectField } from '../../components/Field.tsx';
import { useProject } from '../../project.tsx';
import { GroupEditor } from '../segments/SegmentConditions.tsx';
import { fromDefinition, type Group, newRow, toDefinition } from '../segments/segment-rows.ts';

/** The fields of the flow builder's step editor that take more than one input: durations, conditions, sends, waits. */

const UNITS = [
  { value: '60', label: 'minutes' },
  { value: '3600', label: 'hours' },
  { value: '86400', label: 'days' },
];

/** A duration as a number and a unit; stored in seconds. */
export function DurationField({
  label,
  seconds,
  onChange,
}: {
  label: string;
  seconds: number;
  onChange(s: number): void;
}) {
  const unit = [86_400, 3_600, 60].find((u) => seconds % u === 0 && seconds >= u) ?? 60;
  const id = useId();
  return (
    <fieldset className="field duration">
      <legend>{label}</legend>
      <label className="visually-hidden" htmlFor={`${id}-n`}>
        {label}: how many
      </label>
      <input
        id={`${id}-n`}
        type="number"
        min={1}
        value={Math.round(seconds / unit)}
        onChange={(e) => onChange(Math.max(0, Math.round(Number(e.target.value))) * unit)}
      />
      <label className="visually-hidden" htmlFor={`${id}-u`}>
        {label}: unit
      </label>
      <select
        id={`${id}-u`}
        value={String(unit)}
        onChange={(e) => onChange(Math.round(seconds / unit) * Number(e.target.value))}
      >
        {UNITS.map((u) => (
          <option key={u.value} value={u.value}>
            {u.label}
          </option>
        ))}
      </select>
    </fieldset>
  );
}

/** A condition in the segment language, edited with the segment editor's rows. */
export function ConditionField({
  condition,
  lists,
  onChange,
}: {
  condition: Condition | null | undefined;
  lists: ContactList[];
  onChange(c: Condition): void;
}) {
  const [group, setGroup] = useState<Group>(() =>
    condition && (condition.all?.length ?? 0) + (condition.any?.length ?? 0) > 0
      ? fromDefinition(condition)
      : { mode: 'all', items: [newRow('field')] },
  );
  const [problem, setProblem] = useState<string | null>(null);
  const change = (g: Group) => {
    setGroup(g);
    const result = toDefinition(g);
    if ('problem' in result) {
      setProblem(result.problem);
      onChange({ all: [] });
    } else {
      setProblem(null);
      onChange(result.definition as Condition);
    }
  };
  return (
    <>
      <GroupEditor group={group} depth={1} path="" lists={lists} onChange={change} />
      {problem && <p className="hint">{problem}</p>}
    </>
  );
}

/** Where a path leads: another step, or the end. */
export function SendFields({
  step,
  onChange,
}: {
  step: Extract<FlowStep, { type: 'send' }>;
  onChange(s: FlowStep): void;
}) {
  const { project } = useProject();
  const published = (useQuery(templatesQuery(project.id)).data?.data ?? []).filter((t) => t.latest_version);
  const topicList = useQuery(topicsQuery(project.id)).data?.data ?? [];
  const id = useId();
  return (
    <>
      <SelectField
        label="Content"
        value={step.template_id ?? ''}
        onChange={(v) => onChange({ ...step, template_id: v || null, html: v ? null : (step.html ?? '') })}
        options={[
          { value: '', label: 'HTML written here' },
          ...published.map((t) => ({ value: t.id, label: `Template: ${t.name}` })),
        ]}
      />
      <Field
        label="Subject"
        hint={
          step.template_id
            ? "Leave empty for the template's subject."
            : 'Liquid works here: {{ contact.first_name }}.'
        }
        maxLength={998}
        value={step.subject ?? ''}
        onChange={(e) => onChange({ ...step, subject: e.target.value })}
      />
      {!step.template_id && (
        <div className="field">
          <label htmlFor={`${id}-html`}>HTML</label>
          <textarea
            id={`${id}-html`}
            rows={8}
            value={step.html ?? ''}
            onChange={(e) => onChange({ ...step, html: e.target.value })}
          />
        </div>
      )}
      <Field
        label="From (optional)"
        hint="Else the flow's sender, else the project's default."
        value={step.from ?? ''}
        onChange={(e) => onChange({ ...step, from: e.target.value || null })}
      />
      {(topicList.length > 0 || step.topic_id) && (
        <SelectField
          label="Topic"
          value={step.topic_id ?? ''}
          onChange={(v) => onChange({ ...step, topic_id: v || null })}
          options={[
            { value: '', label: 'No topic: an unsubscribe leaves all marketing' },
            ...topicList.map((t) => ({
              value: t.id,
              label: `${t.name} (those not subscribed skip this message)`,
            })),
          ]}
        />
      )}
    </>
  );
}

export function WaitFields({
  step,
  onChange,
}: {
  step: Extract<FlowStep, { type: 'wait' }>;
  onChange(s: FlowStep): void;
}) {
  const kind =
    step.duration_seconds !== undefined
      ? 'duration'
      : step.until !== undefined
        ? 'until'
        : step.until_property !== undefined
          ? 'property'
          : 'window';
  const base = { id: step.id, type: 'wait' as const, next: step.next };
  return (
    <>
      <SelectField
        label="Wait"
        value={kind}
        onChange={(k) =>
          onChange(
            k === 'duration'
              ? { ...base, duration_seconds: 86_400 }
              : k === 'until'
                ? { ...base, until: '' }
                : k === 'property'
                  ? { ...base, until_property: '' }
                  : { ...base, window: { from_hour: 9, to_hour: 17 } },
          )
        }
        options={[
          { value: 'duration', label: 'for a while' },
          { value: 'until', label: 'until a date' },
          { value: 'property', label: "until a date in the contact's properties" },
          { value: 'window', label: 'until a time of day' },
        ]}
      />
      {kind === 'duration' && (
        <DurationField
          label="Duration"
          seconds={step.duration_seconds ?? 0}
          onChange={(s) => onChange({ ...step, duration_seconds: s })}
        />
      )}
      {kind === 'until' && (
        <Field
          label="Date"
          type="date"
          value={(step.until ?? '').slice(0, 10)}
          onChange={(e) => onChange({ ...step, until: e.target.value })}
        />
      )}
      {kind === 'property' && (
        <Field
          label="Property"
          hint="A property holding an ISO date, e.g. trial_ends."
          value={step.until_property ?? ''}
          onChange={(e) => onChange({ ...step, until_property: e.target.value })}
        />
      )}
      {kind === 'window' && step.window && (
        <div className="row-fields">
          <Field
            label="From hour (0–23)"
            type="number"
            min={0}
            max={23}
            value={step.window.from_hour}
            onChange={(e) =>
              onChange({
                ...step,
                window: {
                  ...(step.window as NonNullable<typeof step.window>),
                  from_hour: Number(e.target.value),
                },
              })
            }
          />
          <Field
            label="To hour (1–24)"
            type="number"
            min={1}
            max={24}
            value={step.window.to_hour}
            onChange={(e) =>
              onChange({
                ...step,
                window: {
                  ...(step.window as NonNullable<typeof step.window>),
                  to_hour: Number(e.target.value),
                },
              })
            }
          />
        </div>
      )}
    </>
  );
}
