import type { FlowStep, FlowTrigger, StepType } from '../../api/flows.ts';

/**
 * The flow builder's model, kept apart from the screens: a flow is its trigger and its steps in the
 * API's normalised form (ids, explicit edges, the first step is where an enrollment starts). These
 * functions add, remove and reconnect steps, list what must be fixed before the flow can be saved
 * or activated, and place the steps on the graph.
 */

export const STEP_LABELS: Record<StepType, string> = {
  send: 'Send email',
  wait: 'Wait',
  wait_for_event: 'Wait for event',
  branch: 'Branch',
  update_contact: 'Update contact',
  webhook: 'Webhook',
  exit: 'Exit',
};

export const TRIGGER_LABELS: Record<FlowTrigger['type'], string> = {
  contact_created: 'Contact created',
  contact_updated: 'Contact updated',
  event: 'Event tracked',
  list_joined: 'Joined a list',
  segment_entered: 'Entered a segment',
  manual: 'Enrolled by hand (API)',
};
export const TRIGGER_TYPES = Object.keys(TRIGGER_LABELS) as FlowTrigger['type'][];

/** A successor of a step: which field holds it and how the graph labels it. */
export interface StepEdge {
  key: string;
  label: string;
  target: string | null;
}

export function edgesOf(step: FlowStep): StepEdge[] {
  switch (step.type) {
    case 'exit':
      return [];
    case 'branch':
      return [
        ...step.branches.map((b, i) => ({ key: `branches.${i}`, label: `Path ${i + 1}`, target: b.next })),
        { key: 'default_next', label: 'Otherwise', target: step.default_next },
      ];
    case 'wait_for_event':
      return [
        { key: 'next', label: 'Event', target: step.next },
        { key: 'timeout_next', label: 'Timed out', target: step.timeout_next },
      ];
    default:
      return [{ key: 'next', label: '', target: step.next }];
  }
}

/** The step with one successor changed (`key` as edgesOf names it). */
export function withEdge(step: FlowStep, key: string, target: string | null): FlowStep {
  if (step.type === 'exit') return step;
  if (step.type === 'branch') {
    if (key === 'default_next') return { ...step, default_next: target };
    const i = Number(key.split('.')[1]);
    return { ...step, branches: step.branches.map((b, j) => (j === i ? { ...b, next: target } : b)) };
  }
  if (step.type === 'wait_for_event' && key === 'timeout_next') return { ...step, timeout_next: target };
  return { ...step, next: target } as FlowStep;
}

function freshId(steps: FlowStep[], type: StepType): string {
  const taken = new Set(steps.map((s) => s.id));
  for (let n = 1; ; n++) if (!taken.has(`${type}_${n}`)) return `${type}_${n}`;
}

/** A new step of a type, empty where the person must decide (the problems list says what). */
export function newStep(steps: FlowStep[], type: StepType, next: string | null): FlowStep {
  const id = freshId(steps, type);
  switch (type) {
    case 'send':
      return { id, type, subject: '', html: '', template_id: null, next };
    case 'wait':
      return { id, type, duration_seconds: 86_400, next };
    case 'wait_for_event':
      return { id, type, event: '', timeout_seconds: 3 * 86_400, next, timeout_next: next };
    case 'branch':
      return { id, type, branches: [{ condition: { all: [] }, next }], default_next: next };
    case 'update_contact':
      return { id, type, set_properties: {}, join_list_id: null, leave_list_id: null, next };
    case 'webhook':
      return { id, type, url: '', next };
    case 'exit':
      return { id, type };
  }
}

/**
 * Inserts a new step after `afterId` (null: right after the trigger, as the new first step). It takes
 * over where that step went (its `next`; for a branch or wait for event, the first path), and that
 * path now leads to it.
 */
export function insertAfter(steps: FlowStep[], afterId: string | null, type: StepType) {
  if (afterId === null) {
    const step = newStep(steps, type, steps[0]?.id ?? null);
    return { steps: [step, ...steps], id: step.id };
  }
  const at = steps.findIndex((s) => s.id === afterId);
  const before = steps[at];
  const edge = edgesOf(before)[0];
  const step = newStep(steps, type, edge?.target ?? null);
  const copy = [...steps];
  copy.splice(at + 1, 0, step);
  if (edge) copy[at] = withEdge(before, edge.key, step.id);
  return { steps: copy, id: step.id };
}

/** Removes a step; whatever led to it now leads where it went (its first path), or ends. */
export function removeStep(steps: FlowStep[], id: string): FlowStep[] {
  const gone = steps.find((s) => s.id === id);
  if (!gone) return steps;
  const onward = edgesOf(gone)[0]?.target ?? null;
  const replacement = onward === id ? null : onward;
  return steps
    .filter((s) => s.id !== id)
    .map((s) =>
      edgesOf(s).reduce((acc, e) => (e.target === id ? withEdge(acc, e.key, replacement) : acc), s),
    );
}

/** Steps the first step leads to, directly or not (the others can never be reached). */
export function reachable(steps: FlowStep[]): Set<string> {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const seen = new Set<string>();
  const queue = steps[0] ? [steps[0].id] : [];
  while (queue.length > 0) {
    const id = queue.shift() as string;
    if (seen.has(id)) continue;
    seen.add(id);
    const step = byId.get(id);
    if (step) for (const e of edgesOf(step)) if (e.target !== null) queue.push(e.target);
  }
  return seen;
}

export interface Problem {
  /** The step at fault, or null for the trigger. */
  stepId: string | null;
  message: string;
}

const conditionRows = (c: { all?: object[]; any?: object[] } | null | undefined) =>
  (c?.all?.length ?? 0) + (c?.any?.length ?? 0);

function stepProblems(step: FlowStep): string[] {
  switch (step.type) {
    case 'send':
      return [
        ...(step.subject?.trim() || step.template_id ? [] : ['needs a subject']),
        ...(step.html?.trim() || step.template_id ? [] : ['needs content: a template or HTML']),
      ];
    case 'wait':
      return step.duration_seconds === undefined && !step.until && !step.until_property && !step.window
        ? ['needs a duration, a date or a time window']
        : step.duration_seconds !== undefined && !(step.duration_seconds >= 1)
          ? ['needs a duration of at least a second']
          : [];
    case 'wait_for_event':
      return [
        ...(step.event.trim() ? [] : ['needs the event to wait for']),
        ...(step.timeout_seconds >= 1 ? [] : ['needs a timeout']),
      ];
    case 'branch':
      return step.branches.length === 0
        ? ['needs at least one path']
        : step.branches.flatMap((b, i) =>
            conditionRows(b.condition) > 0 ? [] : [`path ${i + 1} needs a condition`],
          );
    case 'update_contact':
      return Object.keys(step.set_properties ?? {}).length === 0 && !step.join_list_id && !step.leave_list_id
        ? ['needs a property to set or a list to join or leave']
        : [];
    case 'webhook':
      return /^https?:\/\/\S+$/.test(step.url.trim()) ? [] : ['needs an http(s) URL'];
    case 'exit':
      return [];
  }
}

/** What must change before the flow can be saved (the server would refuse it) or activated. */
export function problemsOf(trigger: FlowTrigger, steps: FlowStep[]): Problem[] {
  const out: Problem[] = [];
  if (trigger.type === 'event' && !trigger.event?.trim())
    out.push({ stepId: null, message: 'The trigger needs an event name' });
  if (trigger.type === 'list_joined' && !trigger.list_id)
    out.push({ stepId: null, message: 'The trigger needs a list' });
  if (trigger.type === 'segment_entered' && !trigger.segment_id)
    out.push({ stepId: null, message: 'The trigger needs a segment' });
  if (steps.length === 0) out.push({ stepId: null, message: 'Add at least one step after the trigger' });
  const ids = new Set(steps.map((s) => s.id));
  const seen = reachable(steps);
  for (const step of steps) {
    const name = `${STEP_LABELS[step.type]} “${step.id}”`;
    for (const p of stepProblems(step)) out.push({ stepId: step.id, message: `${name} ${p}` });
    for (const e of edgesOf(step))
      if (e.target !== null && !ids.has(e.target))
        out.push({ stepId: step.id, message: `${name} leads to a step that no longer exists` });
    if (!seen.has(step.id))
      out.push({
        stepId: step.id,
        message: `${name} cannot be reached from the trigger: connect it or remove it`,
      });
  }
  return out;
}

export interface Placed {
  id: string;
  x: number;
  y: number;
}

export const COLUMN = 250;
export const ROW = 150;

/**
 * Positions for the graph: the trigger on top, each step a row below the first step that reaches it
 * (breadth first), side by side within a row; steps nothing reaches go last.
 */
export function layout(steps: FlowStep[]): { trigger: Placed; steps: Placed[] } {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const depth = new Map<string, number>();
  const queue: string[] = steps[0] ? [steps[0].id] : [];
  if (steps[0]) depth.set(steps[0].id, 1);
  while (queue.length > 0) {
    const id = queue.shift() as string;
    const step = byId.get(id);
    if (!step) continue;
    for (const e of edgesOf(step))
      if (e.target !== null && byId.has(e.target) && !depth.has(e.target)) {
        depth.set(e.target, (depth.get(id) ?? 1) + 1);
        queue.push(e.target);
      }
  }
  const last = Math.max(1, ...depth.values());
  for (const s of steps) if (!depth.has(s.id)) depth.set(s.id, last + 1);
  const rows = new Map<number, string[]>();
  for (const s of steps) {
    const d = depth.get(s.id) as number;
    rows.set(d, [...(rows.get(d) ?? []), s.id]);
  }
  const placed: Placed[] = [];
  for (const [d, ids] of rows)
    for (const [i, id] of ids.entries())
      placed.push({ id, x: (i - (ids.length - 1) / 2) * COLUMN, y: d * ROW });
  return { trigger: { id: 'trigger', x: 0, y: 0 }, steps: placed };
}

/** One line about a step for its node on the graph. */
export function summaryOf(step: FlowStep): string {
  switch (step.type) {
    case 'send':
      return step.subject?.trim() ? step.subject : step.template_id ? 'From a template' : 'No subject yet';
    case 'wait':
      if (step.duration_seconds !== undefined) return `for ${formatSeconds(step.duration_seconds)}`;
      if (step.until) return `until ${step.until}`;
      if (step.until_property) return `until the date in ${step.until_property}`;
      return step.window ? `until ${step.window.from_hour}:00–${step.window.to_hour}:00` : '';
    case 'wait_for_event':
      return `${step.event || '(no event)'} within ${formatSeconds(step.timeout_seconds)}`;
    case 'branch':
      return `${step.branches.length} path${step.branches.length === 1 ? '' : 's'} and otherwise`;
    case 'update_contact':
      return 'properties and lists';
    case 'webhook':
      return step.url || '(no URL)';
    case 'exit':
      return 'the enrollment ends';
  }
}

export function formatSeconds(s: number): string {
  if (s % 86_400 === 0) return `${s / 86_400} day${s === 86_400 ? '' : 's'}`;
  if (s % 3_600 === 0) return `${s / 3_600} hour${s === 3_600 ? '' : 's'}`;
  if (s % 60 === 0) return `${s / 60} minute${s === 60 ? '' : 's'}`;
  return `${s} second${s === 1 ? '' : 's'}`;
}
