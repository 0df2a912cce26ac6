import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useCallback, useMemo, useRef, useState } from 'react';
import { listsQuery } from '../../api/audience.ts';
import {
  type Flow,
  type FlowInput,
  type FlowStep,
  type FlowTrigger,
  flows,
  type StepType,
} from '../../api/flows.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { Field, SelectField } from '../../components/Field.tsx';
import { useProject } from '../../project.tsx';
import { FlowGraph } from './flow-graph.tsx';
import {
  insertAfter,
  type Problem,
  problemsOf,
  removeStep,
  STEP_LABELS,
  TRIGGER_LABELS,
} from './flow-model.ts';
import { ConditionField, StepEditor, TriggerEditor } from './flow-step-editor.tsx';

/**
 * The flow builder: the graph, the selected node's editor beside it, the flow's settings, and what
 * must be fixed before it can be saved or activated. Edits stay in the page until saved; on an
 * active flow (or one with enrollments on its version) saving makes a new version, which the button
 * says.
 */

type Draft = Required<Pick<FlowInput, 'name' | 'trigger' | 'steps' | 'reentry' | 'goal' | 'from'>>;

const draftOf = (flow: Flow | null): Draft => ({
  name: flow?.name ?? '',
  trigger: flow?.trigger ?? { type: 'contact_created' },
  steps: flow?.steps ?? [],
  reentry: flow?.reentry ?? { policy: 'once' },
  goal: flow?.goal ?? null,
  from: flow?.from ?? null,
});

/** The steps as the API takes them: content in one form (template or HTML), empty fields left out. */
function forApi(steps: FlowStep[]): FlowStep[] {
  return steps.map((s) => {
    if (s.type === 'send')
      return {
        ...s,
        subject: s.subject?.trim() ? s.subject : null,
        html: s.template_id ? null : s.html,
        from: s.from?.trim() ? s.from : null,
      };
    if (s.type === 'wait' && s.until) return { ...s, until: new Date(s.until).toISOString() };
    return s;
  });
}

const STEP_TYPES = Object.keys(STEP_LABELS) as StepType[];

function AddStep({ after, onAdd }: { after: string | null; onAdd(type: StepType): void }) {
  const [type, setType] = useState<StepType>('send');
  return (
    <div className="add-step">
      <SelectField
        label={after === null ? 'Add a step right after the trigger' : 'Add a step after this one'}
        value={type}
        onChange={setType}
        options={STEP_TYPES.map((t) => ({ value: t, label: STEP_LABELS[t] }))}
      />
      <button type="button" className="btn" onClick={() => onAdd(type)}>
        Add step
      </button>
    </div>
  );
}

function Problems({ problems, onPick }: { problems: Problem[]; onPick(id: string): void }) {
  if (problems.length === 0) return <p className="muted small">Ready: nothing to fix.</p>;
  return (
    <div className="flow-problems" role="alert">
      <p>
        <strong>
          {problems.length} thing{problems.length === 1 ? '' : 's'} to fix before saving or activating:
        </strong>
      </p>
      <ul>
        {problems.map((p) => (
          <li key={p.message}>
            <button type="button" className="btn link" onClick={() => onPick(p.stepId ?? 'trigger')}>
              {p.message}
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}

function Settings({ draft, set }: { draft: Draft; set(d: Partial<Draft>): void }) {
  const { project } = useProject();
  const lists = useQuery(listsQuery(project.id)).data?.data ?? [];
  return (
    <section className="campaign-card" aria-labelledby="flow-settings-heading">
      <h2 id="flow-settings-heading">Settings</h2>
      <Field
        label="Name"
        required
        maxLength={200}
        value={draft.name}
        onChange={(e) => set({ name: e.target.value })}
      />
      <Field
        label="Sender (optional)"
        hint="The send steps' default From, on a verified domain; else the project's default."
        value={draft.from ?? ''}
        onChange={(e) => set({ from: e.target.value || null })}
      />
      <SelectField
        label="A contact may enter again"
        value={draft.reentry.policy}
        onChange={(policy) =>
          set({
            reentry:
              policy === 'cooldown'
                ? { policy, cooldown_seconds: 30 * 86_400 }
                : { policy: policy as 'once' | 'always' },
          })
        }
        options={[
          { value: 'once', label: 'never (once per contact)' },
          { value: 'always', label: 'whenever the trigger fires and they are not in it' },
          { value: 'cooldown', label: 'after 30 days' },
        ]}
      />
      <div className="field checkbox">
        <input
          id="flow-goal"
          type="checkbox"
          checked={draft.goal !== null}
          onChange={(e) => set({ goal: e.target.checked ? { all: [] } : null })}
        />
        <label htmlFor="flow-goal">A goal: contacts who reach it leave the flow as converted</label>
      </div>
      {draft.goal !== null && (
        <ConditionField condition={draft.goal} lists={lists} onChange={(goal) => set({ goal })} />
      )}
    </section>
  );
}

export function FlowBuilder({ flow, onSaved }: { flow: Flow | null; onSaved?(flow: Flow): void }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [draft, setDraft] = useState<Draft>(() => draftOf(flow));
  const [dirty, setDirty] = useState(flow === null);
  const [selected, setSelected] = useState<string>('trigger');
  const [showProblems, setShowProblems] = useState(false);
  const editorRef = useRef<HTMLDivElement>(null);
  const set = (part: Partial<Draft>) => {
    setDraft((d) => ({ ...d, ...part }));
    setDirty(true);
  };
  const problems = useMemo(() => {
    const list = problemsOf(draft.trigger, draft.steps);
    if (!draft.name.trim()) list.unshift({ stepId: null, message: 'The flow needs a name (in Settings)' });
    if (draft.goal && (draft.goal.all?.length ?? 0) + (draft.goal.any?.length ?? 0) === 0)
      list.push({ stepId: null, message: 'The goal needs a condition (in Settings), or untick it' });
    return list;
  }, [draft]);
  const faulty = useMemo(() => new Set(problems.map((p) => p.stepId ?? 'trigger')), [problems]);
  const pick = useCallback((id: string) => {
    setSelected(id);
    requestAnimationFrame(() => editorRef.current?.focus());
  }, []);

  const body = () => ({ ...draft, name: draft.name.trim(), steps: forApi(draft.steps) });
  const save = useMutation({
    mutationFn: async () => {
      if (problems.length > 0) throw new Error('Fix the problems listed below first.');
      return flow ? flows.update(project.id, flow.id, body()) : flows.create(project.id, body());
    },
    onSuccess: async (saved) => {
      setDirty(false);
      setDraft(draftOf(saved));
      queryClient.setQueryData(['project', project.id, 'flow', saved.id], saved);
      await queryClient.invalidateQueries({ queryKey: ['project', project.id, 'flows'] });
      if (!flow) navigate({ to: '/flows/$flowId', params: { flowId: saved.id } });
      onSaved?.(saved);
    },
    onError: () => setShowProblems(true),
  });
  const versioned = flow && (flow.status === 'active' || flow.stats.entered > 0);
  const step = draft.steps.find((s) => s.id === selected);
  const title =
    selected === 'trigger'
      ? `Trigger: ${TRIGGER_LABELS[draft.trigger.type]}`
      : step
        ? `${STEP_LABELS[step.type]} “${step.id}”`
        : '';

  return (
    <>
      <div className="flow-builder">
        <FlowGraph
          trigger={draft.trigger}
          steps={draft.steps}
          stats={dirty ? undefined : flow?.stats.steps}
          selected={selected}
          faulty={showProblems || flow !== null ? faulty : new Set()}
          onSelect={pick}
        />
        <section className="campaign-card flow-editor" aria-labelledby="flow-editor-heading">
          <h2 id="flow-editor-heading" tabIndex={-1} ref={editorRef as never}>
            {title}
          </h2>
          {selected === 'trigger' || !step ? (
            <>
              <TriggerEditor trigger={draft.trigger} onChange={(trigger: FlowTrigger) => set({ trigger })} />
              <AddStep
                after={null}
                onAdd={(type) => {
                  const r = insertAfter(draft.steps, null, type);
                  set({ steps: r.steps });
                  pick(r.id);
                }}
              />
            </>
          ) : (
            <StepEditor
              step={step}
              steps={draft.steps}
              onChange={(s) => set({ steps: draft.steps.map((x) => (x.id === s.id ? s : x)) })}
            >
              {step.type !== 'exit' && (
                <AddStep
                  after={step.id}
                  onAdd={(type) => {
                    const r = insertAfter(draft.steps, step.id, type);
                    set({ steps: r.steps });
                    pick(r.id);
                  }}
                />
              )}
              <button
                type="button"
                className="btn danger"
                onClick={() => {
                  set({ steps: removeStep(draft.steps, step.id) });
                  pick('trigger');
                }}
              >
                Remove this step
              </button>
            </StepEditor>
          )}
        </section>
      </div>
      <Settings draft={draft} set={set} />
      <section className="campaign-card" aria-labelledby="flow-save-heading">
        <h2 id="flow-save-heading">{dirty ? 'Unsaved changes' : 'Saved'}</h2>
        {(showProblems || flow !== null) && <Problems problems={problems} onPick={pick} />}
        <ErrorMessage error={save.error} />
        <div className="actions">
          <button
            type="button"
            className="btn primary"
            disabled={!dirty || save.isPending}
            onClick={() => {
              setShowProblems(true);
              save.mutate();
            }}
          >
            {save.isPending
              ? 'Saving…'
              : flow === null
                ? 'Create flow'
                : versioned
                  ? `Save as version ${flow.version + 1}`
                  : 'Save flow'}
          </button>
          {dirty && flow && (
            <button
              type="button"
              className="btn"
              onClick={() => {
                setDraft(draftOf(flow));
                setDirty(false);
              }}
            >
              Discard changes
            </button>
          )}
        </div>
        {versioned && (
          <p className="muted small">
            Contacts already in the flow finish on version {flow.version}; new ones start on the saved
            version.
          </p>
        )}
      </section>
    </>
  );
}
