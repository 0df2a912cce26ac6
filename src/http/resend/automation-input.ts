import { ValidationError } from '../../domain/core/errors.ts';

/**
 * An automation's steps and connections (Resend's graph) as a flow's trigger and steps (issue 51),
 * the inverse of automation-steps.ts; parseDefinition (domain/flows) then checks the result as it
 * checks /v1's. The trigger step's event is the flow's event trigger; the steps are ordered from
 * it; each connection is the edge its type names (`default`, a condition's `condition_met` and
 * `condition_not_met`, a wait_for_event's `event_received` and `timeout`), a missing one the end.
 * What a flow cannot do is a 400 naming the step and what Posthorn offers instead.
 */

type Obj = Record<string, unknown>;
interface StepIn {
  key: string;
  type: string;
  config: Obj;
}
interface ConnectionIn {
  from: string;
  to: string;
  type?: string;
}

const UNITS: Record<string, number> = { second: 1, minute: 60, hour: 3600, day: 86_400, week: 604_800 };
/** The longest wait for an event when the automation gives no timeout (a flow's limit). */
const LONGEST_WAIT = 366 * 86_400;

/** "30 minutes", "1 day", "2 hours 30 minutes" as seconds. */
export function durationSeconds(value: unknown, at: string): number {
  const text = typeof value === 'string' ? value.trim().toLowerCase() : '';
  const parts = [...text.matchAll(/(\d+)\s*(second|minute|hour|day|week)s?\b(?:\s*(?:,|and)?\s*)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text.replace(/\s+$/, ''))
    throw new ValidationError(`\`${at}\` must be a duration such as "30 minutes", "1 hour" or "3 days"`);
  return parts.reduce((sum, p) => sum + Number(p[1]) * UNITS[p[2]], 0);
}

const OPS: Record<string, string> = {
  eq: 'equals',
  neq: 'not_equals',
  gt: 'gt',
  gte: 'gte',
  lt: 'lt',
  lte: 'lte',
  contains: 'contains',
  starts_with: 'starts_with',
  exists: 'exists',
  is_empty: 'not_exists',
};
const CONTACT_FIELDS = new Set(['email', 'first_name', 'last_name']);

function operator(rule: Obj, at: string): string {
  const op = OPS[String(rule.operator)];
  if (!op)
    throw new ValidationError(
      `\`${at}.operator\` must be one of ${Object.keys(OPS).join(', ')} (Posthorn has no ends_with)`,
    );
  return op;
}

/** A condition rule tree on `contact.*` fields as a segment-language group. */
function contactCondition(rule: Obj, at: string): Obj {
  if (rule.type === 'and' || rule.type === 'or') {
    if (!Array.isArray(rule.rules) || rule.rules.length === 0)
      throw new ValidationError(`\`${at}.rules\` must hold the rules to combine`);
    return {
      [rule.type === 'and' ? 'all' : 'any']: rule.rules.map((r, i) => contactItem(r, `${at}.rules[${i}]`)),
    };
  }
  return { all: [contactItem(rule, at)] };
}

function contactItem(rule: unknown, at: string): Obj {
  if (typeof rule !== 'object' || rule === null) throw new ValidationError(`\`${at}\` must be a rule`);
  const r = rule as Obj;
  if (r.type === 'and' || r.type === 'or') return contactCondition(r, at);
  const field = typeof r.field === 'string' ? r.field : '';
  if (!field.startsWith('contact.'))
    throw new ValidationError(
      `\`${at}.field\` must be a contact.* field: Posthorn's conditions read the contact (an event's payload is matched by the trigger or a wait_for_event's filter_rule)`,
    );
  const name = field.slice('contact.'.length);
  const op = operator(r, at);
  return {
    field: CONTACT_FIELDS.has(name) ? name : `properties.${name}`,
    op,
    ...(op === 'exists' || op === 'not_exists' ? {} : { value: r.value }),
  };
}

/** A wait_for_event's filter rule (`event.*` fields, joined by `and`) as a flow's `where`. */
function eventWhere(rule: unknown, at: string): Obj[] {
  if (rule === undefined || rule === null) return [];
  const r = rule as Obj;
  if (r.type === 'and' && Array.isArray(r.rules))
    return r.rules.flatMap((x, i) => eventWhere(x, `${at}.rules[${i}]`));
  const field = typeof r.field === 'string' ? r.field : '';
  if (r.type !== 'rule' || !field.startsWith('event.'))
    throw new ValidationError(
      `\`${at}\` must be rules on event.* fields joined by "and" (Posthorn has no "or" here)`,
    );
  const op = operator(r, at);
  return [
    {
      property: field.slice('event.'.length),
      op,
      ...(op === 'exists' || op === 'not_exists' ? {} : { value: r.value }),
    },
  ];
}

function refuse(at: string, what: string): never {
  throw new ValidationError(`\`${at}\`: ${what}`);
}

/** One step's own fields (edges apart) as a flow step's. */
function stepFields(s: StepIn, at: string): Obj {
  const c = s.config ?? {};
  switch (s.type) {
    case 'send_email': {
      if (c.reply_to != null)
        refuse(`${at}.config.reply_to`, "a flow's message takes its reply-to from its template");
      const template = (c.template ?? {}) as Obj;
      return {
        type: 'send',
        template_id: template.id ?? c.template_id,
        ...(template.variables ? { variables: template.variables } : {}),
        ...(c.subject != null ? { subject: c.subject } : {}),
        ...(c.from != null ? { from: c.from } : {}),
        ...(c.topic_id != null ? { topic_id: c.topic_id } : {}),
      };
    }
    case 'delay':
      return { type: 'wait', duration_seconds: durationSeconds(c.duration, `${at}.config.duration`) };
    case 'wait_for_event':
      return {
        type: 'wait_for_event',
        event: c.event_name,
        where: eventWhere(c.filter_rule, `${at}.config.filter_rule`),
        timeout_seconds:
          c.timeout == null ? LONGEST_WAIT : durationSeconds(c.timeout, `${at}.config.timeout`),
      };
    case 'condition':
      return { type: 'branch', condition: contactCondition(c, `${at}.config`) };
    case 'contact_update': {
      for (const field of ['first_name', 'last_name', 'unsubscribed'])
        if (c[field] !== undefined)
          refuse(
            `${at}.config.${field}`,
            'a flow step sets contact properties and lists only (`properties`)',
          );
      return { type: 'update_contact', set_properties: c.properties };
    }
    case 'add_to_segment':
      return { type: 'update_contact', join_list_id: c.segment_id };
    case 'contact_delete':
      return refuse(`${at}.type`, 'a flow does not delete contacts (DELETE /contacts/{id} does)');
    default:
      return refuse(
        `${at}.type`,
        `must be a step type of Resend's automations, not ${JSON.stringify(s.type)}`,
      );
  }
}

/** Resend's automation graph as a flow's `trigger` and `steps`. */
export function flowParts(steps: unknown, connections: unknown): { trigger: Obj; steps: Obj[] } {
  if (!Array.isArray(steps) || !Array.isArray(connections))
    throw new ValidationError('`steps` and `connections` must be arrays (given together)');
  const given = steps as StepIn[];
  const triggers = given.filter((s) => s?.type === 'trigger');
  if (triggers.length !== 1) throw new ValidationError('`steps` must hold exactly one step of type trigger');
  const t = triggers[0].config ?? {};
  const trigger = (t.posthorn_trigger as Obj | undefined) ?? { type: 'event', event: t.event_name };
  const edges = (from: string, type: string) =>
    (connections as ConnectionIn[]).find((c) => c?.from === from && (c.type ?? 'default') === type)?.to ??
    null;
  // the steps in order from the trigger (the first is where a run starts), then any left over
  const byKey = new Map(given.filter((s) => s.type !== 'trigger').map((s) => [s.key, s]));
  const ordered: StepIn[] = [];
  const visit = (key: string | null) => {
    const s = key === null ? undefined : byKey.get(key);
    if (!s || ordered.includes(s)) return;
    ordered.push(s);
    for (const c of connections as ConnectionIn[]) if (c?.from === s.key) visit(c.to);
  };
  visit(edges(triggers[0].key, 'default'));
  for (const s of byKey.values()) if (!ordered.includes(s)) ordered.push(s);
  return {
    trigger,
    steps: ordered.map((s) => {
      const at = `steps[${given.indexOf(s)}]`;
      const { condition, ...fields } = stepFields(s, at);
      if (fields.type === 'branch')
        return {
          id: s.key,
          ...fields,
          branches: [{ condition, next: edges(s.key, 'condition_met') }],
          default_next: edges(s.key, 'condition_not_met'),
        };
      if (fields.type === 'wait_for_event')
        return {
          id: s.key,
          ...fields,
          next: edges(s.key, 'event_received'),
          timeout_next: edges(s.key, 'timeout'),
        };
      return { id: s.key, ...fields, next: edges(s.key, 'default') };
    }),
  };
}
