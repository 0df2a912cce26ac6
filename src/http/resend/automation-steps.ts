import type { FlowDefinition, Step, Trigger } from '../../domain/flows/definition.ts';
import { STEP_TYPE } from './vocabulary.ts';

/**
 * A flow's definition as an automation's steps and connections (issue 51): Posthorn's trigger is
 * the `trigger` step, each step keeps its id as `key`, and each successor is a connection (a
 * wait_for_event's `event_received` and `timeout`, a branch's `condition_met` and
 * `condition_not_met`). An exit step ends its path: it is not shown, nor connections to it.
 */

type Connection = { from: string; to: string; type: string };

const TRIGGER_KEY = 'trigger';
const seconds = (n: number) => `${n} seconds`;

function triggerConfig(t: Trigger): Record<string, unknown> {
  if (t.type === 'event') return { event_name: t.event };
  return { posthorn_trigger: t };
}

function stepConfig(s: Step): Record<string, unknown> {
  switch (s.type) {
    case 'send':
      return {
        template: s.template_id ? { id: s.template_id, variables: s.variables ?? {} } : null,
        subject: s.subject,
        from: s.from,
        ...(s.topic_id ? { topic_id: s.topic_id } : {}),
      };
    case 'wait':
      return s.duration_seconds !== undefined
        ? { duration: seconds(s.duration_seconds) }
        : { until: s.until ?? null, until_property: s.until_property ?? null };
    case 'wait_for_event':
      return { event_name: s.event, timeout: seconds(s.timeout_seconds) };
    case 'branch':
      return { type: 'posthorn_branches', branches: s.branches.map((b) => b.condition) };
    case 'update_contact':
      if (s.join_list_id && !s.set_properties && !s.leave_list_id) return { segment_id: s.join_list_id };
      return { properties: s.set_properties ?? {} };
    case 'webhook':
      return { url: s.url };
    default:
      return {};
  }
}

function stepType(s: Step): string {
  if (s.type === 'update_contact' && s.join_list_id && !s.set_properties && !s.leave_list_id)
    return 'add_to_segment';
  return STEP_TYPE[s.type] ?? s.type;
}

function connectionsOf(s: Step, shown: Set<string>): Connection[] {
  const to = (target: string | null, type: string) =>
    target !== null && shown.has(target) ? [{ from: s.id, to: target, type }] : [];
  switch (s.type) {
    case 'exit':
      return [];
    case 'branch':
      return [
        ...s.branches.flatMap((b) => to(b.next, 'condition_met')),
        ...to(s.default_next, 'condition_not_met'),
      ];
    case 'wait_for_event':
      return [...to(s.next, 'event_received'), ...to(s.timeout_next, 'timeout')];
    default:
      return to(s.next, 'default');
  }
}

export function automationGraph(def: FlowDefinition) {
  const steps = def.steps.filter((s) => s.type !== 'exit');
  const shown = new Set(steps.map((s) => s.id));
  return {
    steps: [
      { key: TRIGGER_KEY, type: 'trigger', config: triggerConfig(def.trigger) },
      ...steps.map((s) => ({ key: s.id, type: stepType(s), config: stepConfig(s) })),
    ],
    connections: [
      ...(steps[0] ? [{ from: TRIGGER_KEY, to: steps[0].id, type: 'default' }] : []),
      ...steps.flatMap((s) => connectionsOf(s, shown)),
    ],
  };
}
