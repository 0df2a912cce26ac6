import type { Group, Op } from '../audience/segment-language.ts';
import { parseMailbox } from '../core/addresses.ts';
import {
  checkCondition,
  type Defaults,
  type Edge,
  fail,
  isObject,
  MAX_STEPS,
  type Obj,
  parseReentry,
  parseStep,
  parseTrigger,
  STEP_ID,
  text,
} from './definition-parts.ts';

export {
  checkCondition,
  MAX_BRANCHES,
  MAX_SECONDS,
  MAX_STEPS,
  STEP_TYPES,
  TRIGGER_TYPES,
} from './definition-parts.ts';

/**
 * A flow's definition in its normalised form, as `flow_versions.definition` stores it and the
 * engine reads it: every step has an id and explicit edges (`next` null = the enrollment completes),
 * the first step is where an enrollment starts. `parseDefinition` turns the API's looser input
 * (ids and edges optional) into this form, or refuses it with a 400 naming the field or step.
 */
export type EventWhere = {
  property: string;
  op: Op;
  value?: string | number | boolean | (string | number | boolean)[];
};

export type Trigger =
  | { type: 'contact_created' }
  | { type: 'contact_updated'; condition: Group | null }
  | { type: 'event'; event: string; where: EventWhere[] }
  | { type: 'list_joined'; list_id: string }
  | { type: 'segment_entered'; segment_id: string }
  | { type: 'manual' };

export type Reentry =
  | { policy: 'once' }
  | { policy: 'always' }
  | { policy: 'cooldown'; cooldown_seconds: number };

/** A time-of-day window: hours [from_hour, to_hour) on the given days (0 = Sunday .. 6 = Saturday; all when absent). */
export type WaitWindow = { from_hour: number; to_hour: number; days?: number[] };

export type SendStep = {
  id: string;
  type: 'send';
  subject: string | null;
  html: string | null;
  template_id: string | null;
  template_version: number | null;
  /** Values for the template's variables (only with `template_id`; absent when none are given). */
  variables?: Record<string, unknown>;
  /** The sender address; `checkReferences` (references.ts) settles it (step's, else the flow's, else the template's, else the shared default). */
  from: string | null;
  from_name: string | null;
  /** Only contacts subscribed to this topic get the message; the others pass the step without it. */
  topic_id?: string;
  next: string | null;
};
export type WaitStep = {
  id: string;
  type: 'wait';
  duration_seconds?: number;
  /** An ISO 8601 moment. */
  until?: string;
  /** The bare name of a contact property holding an ISO date (input may say `properties.<name>`). */
  until_property?: string;
  window?: WaitWindow;
  next: string | null;
};
export type Step =
  | SendStep
  | WaitStep
  | {
      id: string;
      type: 'wait_for_event';
      event: string;
      where: EventWhere[];
      timeout_seconds: number;
      next: string | null;
      timeout_next: string | null;
    }
  | {
      id: string;
      type: 'branch';
      branches: { condition: Group; next: string | null }[];
      default_next: string | null;
    }
  | {
      id: string;
      type: 'update_contact';
      set_properties: Record<string, unknown> | null;
      join_list_id: string | null;
      leave_list_id: string | null;
      next: string | null;
    }
  /** Posts the contact's record to `url` as a delivery of event type FLOW_WEBHOOK_EVENT (webhook-step.ts). */
  | { id: string; type: 'webhook'; url: string; next: string | null }
  | { id: string; type: 'exit' };

/** The event type of a webhook step's calls. */
export const FLOW_WEBHOOK_EVENT = 'flow.step';

export interface FlowDefinition {
  trigger: Trigger;
  reentry: Reentry;
  goal: Group | null;
  steps: Step[];
}

/** The ids each step names as a successor (for reachability and loop checks). */
export function successors(step: Step): (string | null)[] {
  switch (step.type) {
    case 'exit':
      return [];
    case 'branch':
      return [...step.branches.map((b) => b.next), step.default_next];
    case 'wait_for_event':
      return [step.next, step.timeout_next];
    default:
      return [step.next];
  }
}

/** A cycle that passes through no timed wait (a duration wait or a wait_for_event) would never stop. */
function checkLoops(steps: Step[]) {
  const pauses = (s: Step) =>
    (s.type === 'wait' && s.duration_seconds !== undefined) || s.type === 'wait_for_event';
  const byId = new Map(steps.map((s) => [s.id, s]));
  const state = new Map<string, 'open' | 'done'>();
  const visit = (s: Step, path: string[]) => {
    state.set(s.id, 'open');
    for (const id of successors(s)) {
      const t = id === null ? undefined : byId.get(id);
      if (!t || pauses(t)) continue;
      if (state.get(t.id) === 'open')
        fail(
          `\`steps\`: the steps ${[...path.slice(path.indexOf(t.id)), t.id].join(' → ')} form an endless loop; put a wait (duration_seconds) or wait_for_event in it`,
        );
      if (!state.has(t.id)) visit(t, [...path, t.id]);
    }
    state.set(s.id, 'done');
  };
  for (const s of steps) if (!pauses(s) && !state.has(s.id)) visit(s, [s.id]);
}

/**
 * The API's definition parts ({trigger, steps, reentry?, goal?, from?, from_name?}) checked and
 * normalised (400 naming the field or step on anything wrong). Step ids default to `step_<n>` by
 * position and a missing edge to the following step (null after the last). The flow-level `from`
 * and `from_name` become each send step's defaults. Checks needing the project (templates, lists,
 * segments, sender domains, webhook targets) are `references.ts`'s.
 */
export function parseDefinition(input: unknown): FlowDefinition {
  if (!isObject(input)) return fail('The flow must be an object with `trigger` and `steps`');
  if (input.trigger === undefined) fail('Field `trigger` is required, e.g. {"type": "contact_created"}');
  const trigger = parseTrigger(input.trigger);
  const rawSteps = input.steps;
  if (!Array.isArray(rawSteps) || rawSteps.length === 0 || rawSteps.length > MAX_STEPS)
    fail(`\`steps\` must be an array of 1 to ${MAX_STEPS} steps`);
  const fromMailbox =
    input.from == null
      ? null
      : typeof input.from === 'string'
        ? parseMailbox(input.from, 'from')
        : fail('`from` must be an address string');
  const defaults: Defaults = {
    from: fromMailbox?.address ?? null,
    from_name: text(input.from_name, 'from_name', 200, { oneLine: true }) ?? (fromMailbox?.name || null),
  };
  const list = rawSteps as unknown[];
  const ids = list.map((s, i) => {
    const id = isObject(s) ? s.id : undefined;
    if (id == null) return `step_${i + 1}`;
    if (typeof id !== 'string' || !STEP_ID.test(id))
      return fail(`\`steps[${i}].id\` may contain only letters, digits, _ and - (1 to 64 characters)`);
    return id;
  });
  const twice = ids.find((id, i) => ids.indexOf(id) !== i);
  if (twice !== undefined) fail(`\`steps\`: the id "${twice}" is used twice; each step needs its own`);
  const resolve = (e: Edge, i: number, at: string): string | null => {
    if (e === undefined) return ids[i + 1] ?? null;
    if (e !== null && !ids.includes(e)) fail(`\`${at}\`: no step "${e}" in this flow`);
    return e;
  };
  const steps = list.map((raw, i) => {
    const { step, edges, branchEdges } = parseStep(raw, i, defaults);
    const out: Obj = { id: ids[i], ...step };
    for (const [k, e] of Object.entries(edges)) out[k] = resolve(e, i, `steps[${i}].${k}`);
    if (step.type === 'branch')
      out.branches = (step.branches as Obj[]).map((b, j) => ({
        ...b,
        next: resolve(branchEdges[j], i, `steps[${i}].branches[${j}].next`),
      }));
    return out as Step;
  });
  checkLoops(steps);
  const goal = input.goal == null ? null : checkCondition(input.goal, 'goal');
  return { trigger, reentry: parseReentry(input.reentry), goal, steps };
}

/** The step with this id, if the definition has one. */
export function stepById(def: FlowDefinition, id: string): Step | undefined {
  return def.steps.find((s) => s.id === id);
}
