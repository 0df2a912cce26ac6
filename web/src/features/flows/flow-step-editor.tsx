import { useQuery } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { type ContactList, listsQuery, segmentsQuery } from '../../api/audience.ts';
import type { FlowStep, FlowTrigger } from '../../api/flows.ts';
import { Field, SelectField } from '../../components/Field.tsx';
import { useProject } from '../../project.tsx';
import { edgesOf, STEP_LABELS, TRIGGER_LABELS, TRIGGER_TYPES, withEdge } from './flow-model.ts';
import { ConditionField, DurationField, SendFields, WaitFields } from './flow-step-fields.tsx';

/** The editor beside the graph: the trigger's or one step's fields and where each of its paths leads. */

function NextSelect({
  label,
  value,
  steps,
  self,
  onChange,
}: {
  label: string;
  value: string | null;
  steps: FlowStep[];
  self: string;
  onChange(v: string | null): void;
}) {
  return (
    <SelectField
      label={label}
      value={value ?? ''}
      onChange={(v) => onChange(v === '' ? null : v)}
      options={[
        { value: '', label: 'End of the flow' },
        ...steps
          .filter((s) => s.id !== self)
          .map((s) => ({ value: s.id, label: `${s.id} (${STEP_LABELS[s.type]})` })),
      ]}
    />
  );
}

export function TriggerEditor({
  trigger,
  onChange,
}: {
  trigger: FlowTrigger;
  onChange(t: FlowTrigger): void;
}) {
  const { project } = useProject();
  const lists = useQuery(listsQuery(project.id)).data?.data ?? [];
  const segments = useQuery(segmentsQuery(project.id)).data?.data ?? [];
  const choose = (type: FlowTrigger['type']) => {
    if (type === 'event') onChange({ type, event: '' });
    else if (type === 'list_joined') onChange({ type, list_id: lists[0]?.id ?? '' });
    else if (type === 'segment_entered') onChange({ type, segment_id: segments[0]?.id ?? '' });
    else onChange({ type });
  };
  return (
    <>
      <SelectField
        label="Contacts enter when"
        value={trigger.type}
        onChange={choose}
        options={TRIGGER_TYPES.map((value) => ({ value, label: TRIGGER_LABELS[value] }))}
      />
      {trigger.type === 'event' && (
        <Field
          label="Event name"
          hint="The name your app gives the event when it tracks it, e.g. signed_up."
          value={trigger.event}
          onChange={(e) => onChange({ ...trigger, event: e.target.value })}
        />
      )}
      {trigger.type === 'list_joined' && (
        <SelectField
          label="List"
          value={trigger.list_id}
          onChange={(list_id) => onChange({ ...trigger, list_id })}
          options={[
            { value: '', label: 'Choose a list' },
            ...lists.map((l) => ({ value: l.id, label: l.name })),
          ]}
        />
      )}
      {trigger.type === 'segment_entered' && (
        <SelectField
          label="Segment"
          value={trigger.segment_id}
          onChange={(segment_id) => onChange({ ...trigger, segment_id })}
          options={[
            { value: '', label: 'Choose a segment' },
            ...segments.map((s) => ({ value: s.id, label: s.name })),
          ]}
        />
      )}
      <p className="hint">
        Only contacts subscribed to marketing are enrolled, and only while the flow is active.
      </p>
    </>
  );
}

function StepFields({
  step,
  lists,
  onChange,
}: {
  step: FlowStep;
  lists: ContactList[];
  onChange(s: FlowStep): void;
}) {
  switch (step.type) {
    case 'send':
      return <SendFields step={step} onChange={onChange} />;
    case 'wait':
      return <WaitFields step={step} onChange={onChange} />;
    case 'wait_for_event':
      return (
        <>
          <Field
            label="Event name"
            value={step.event}
            onChange={(e) => onChange({ ...step, event: e.target.value })}
          />
          <DurationField
            label="Give up after"
            seconds={step.timeout_seconds}
            onChange={(s) => onChange({ ...step, timeout_seconds: s })}
          />
        </>
      );
    case 'branch':
      return (
        <>
          {step.branches.map((b, i) => (
            <fieldset
              className="field branch-path"
              // biome-ignore lint/suspicious/noArrayIndexKey: paths have no identity of their own; removing one renumbers the rest, whose editors start afresh
              key={`${step.id}-${i}-${step.branches.length}`}
            >
              <legend>Path {i + 1}: contacts who match</legend>
              <ConditionField
                condition={b.condition}
                lists={lists}
                onChange={(condition) =>
                  onChange({
                    ...step,
                    branches: step.branches.map((x, j) => (j === i ? { ...x, condition } : x)),
                  })
                }
              />
              {step.branches.length > 1 && (
                <button
                  type="button"
                  className="btn link"
                  onClick={() => onChange({ ...step, branches: step.branches.filter((_, j) => j !== i) })}
                >
                  Remove path {i + 1}
                </button>
              )}
            </fieldset>
          ))}
          <button
            type="button"
            className="btn"
            onClick={() =>
              onChange({
                ...step,
                branches: [...step.branches, { condition: { all: [] }, next: step.default_next }],
              })
            }
          >
            Add a path
          </button>
        </>
      );
    case 'update_contact':
      return (
        <>
          <Field
            label="Set properties (JSON)"
            hint='For example {"onboarded": true}.'
            defaultValue={JSON.stringify(step.set_properties ?? {})}
            onChange={(e) => {
              try {
                const v = JSON.parse(e.target.value || '{}');
                if (v && typeof v === 'object' && !Array.isArray(v)) onChange({ ...step, set_properties: v });
              } catch {}
            }}
          />
          {(['join_list_id', 'leave_list_id'] as const).map((k) => (
            <SelectField
              key={k}
              label={k === 'join_list_id' ? 'Join list' : 'Leave list'}
              value={step[k] ?? ''}
              onChange={(v) => onChange({ ...step, [k]: v || null })}
              options={[{ value: '', label: 'None' }, ...lists.map((l) => ({ value: l.id, label: l.name }))]}
            />
          ))}
        </>
      );
    case 'webhook':
      return (
        <Field
          label="URL"
          hint="Posted to with the enrollment, signed like the project's webhooks."
          type="url"
          value={step.url}
          onChange={(e) => onChange({ ...step, url: e.target.value })}
        />
      );
    case 'exit':
      return <p>The enrollment ends here (counted as exited).</p>;
  }
}

export function StepEditor({
  step,
  steps,
  onChange,
  children,
}: {
  step: FlowStep;
  steps: FlowStep[];
  onChange(s: FlowStep): void;
  children?: ReactNode;
}) {
  const { project } = useProject();
  const lists = useQuery(listsQuery(project.id)).data?.data ?? [];
  return (
    <>
      <StepFields key={step.id} step={step} lists={lists} onChange={onChange} />
      {edgesOf(step).map((e) => (
        <NextSelect
          key={e.key}
          label={e.label ? `${e.label}: then` : 'Then'}
          value={e.target}
          steps={steps}
          self={step.id}
          onChange={(target) => onChange(withEdge(step, e.key, target))}
        />
      ))}
      {children}
    </>
  );
}

export { ConditionField };
