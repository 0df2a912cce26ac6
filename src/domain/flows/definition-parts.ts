import { checkProperties, PROPERTY_KEY } from '../audience/fields.ts';
import { type Group, validateDefinition } from '../audience/segment-language.ts';
import { parseMailbox } from '../core/addresses.ts';
import { parseIsoDate } from '../core/dates.ts';
import { ValidationError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import { templateValues } from '../templates/message-checks.ts';
import type { EventWhere, Reentry, Trigger, WaitWindow } from './definition.ts';

/**
 * The parts of a flow definition as the API gives them, checked one by one: the trigger, the
 * re-entry policy, conditions, and each step's own fields. `definition.ts` assembles them (ids,
 * edges, loops) into the normalised definition. Every failure is a 400 naming the field or step.
 */
export const STEP_TYPES = [
  'send',
  'wait',
  'wait_for_event',
  'branch',
  'update_contact',
  'webhook',
  'exit',
] as const;
export const TRIGGER_TYPES = [
  'contact_created',
  'contact_updated',
  'event',
  'list_joined',
  'segment_entered',
  'manual',
] as const;
export const MAX_STEPS = 100;
export const MAX_BRANCHES = 20;
/** Durations, timeouts and cooldowns: 1 second to 366 days. */
export const MAX_SECONDS = 366 * 24 * 3600;
export const STEP_ID = /^[A-Za-z0-9_-]{1,64}$/;

export type Obj = Record<string, unknown>;
export const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
export const fail = (message: string): never => {
  throw new ValidationError(message);
};

function only(o: Obj, at: string, keys: string[]) {
  const extra = Object.keys(o).find((k) => !keys.includes(k));
  if (extra !== undefined)
    fail(`\`${at}\`: unknown field "${extra.slice(0, 60)}"; allowed: ${keys.join(', ')}`);
}

export function text(v: unknown, at: string, max: number, opts: { oneLine?: boolean } = {}): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') return fail(`\`${at}\` must be a string`);
  if (v.trim() === '') fail(`\`${at}\` must not be empty`);
  if (v.length > max) fail(`\`${at}\` must be at most ${max} characters`);
  if (opts.oneLine && /[\r\n]/.test(v)) fail(`\`${at}\` must not contain line breaks`);
  return v;
}

function seconds(v: unknown, at: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_SECONDS)
    fail(`\`${at}\` must be a whole number of seconds from 1 to ${MAX_SECONDS} (366 days)`);
  return v as number;
}

function eventName(v: unknown, at: string): string {
  if (typeof v !== 'string' || v.trim() === '' || v.length > 200)
    fail(`\`${at}\` must be an event name (1 to 200 characters)`);
  return v as string;
}

/** A segment-language condition, its errors renamed from `definition` to where it sits. */
export function checkCondition(v: unknown, at: string): Group {
  return renamed(() => validateDefinition(v).definition, 'definition', at);
}

/** Runs a segment-language check, its errors' path (`definition...`) renamed to `at`. */
function renamed<T>(check: () => T, prefix: string, at: string): T {
  try {
    return check();
  } catch (err) {
    if (!(err instanceof ValidationError) || !err.message.startsWith(prefix)) throw err;
    const [, path, rest] = err.message.slice(prefix.length).match(/^([^\s:]*)([\s\S]*)$/) ?? [];
    throw new ValidationError(`\`${at}${path}\`${rest}`);
  }
}

/** An event's property conditions, checked as the segment language checks an event's `where`. */
function checkWhere(v: unknown, at: string): EventWhere[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) return fail(`\`${at}\` must be an array of property conditions`);
  if (v.length > 20) fail(`\`${at}\` has at most 20 conditions`);
  renamed(() => validateDefinition({ all: [{ event: 'x', where: v }] }), 'definition.all[0].where', at);
  return v.map(
    (w: Obj) =>
      ({ property: w.property, op: w.op, ...('value' in w ? { value: w.value } : {}) }) as EventWhere,
  );
}

function uuid(v: unknown, at: string, noun: string): string {
  if (typeof v !== 'string' || !isUuid(v)) fail(`\`${at}\` must be a ${noun} id`);
  return (v as string).toLowerCase();
}

export function parseTrigger(v: unknown): Trigger {
  if (!isObject(v))
    return fail('`trigger` must be an object with a `type`, e.g. {"type": "contact_created"}');
  const type = v.type;
  const known = TRIGGER_TYPES.find((t) => t === type);
  if (!known) return fail(`\`trigger.type\` must be one of ${TRIGGER_TYPES.join(', ')}`);
  switch (known) {
    case 'contact_created':
    case 'manual':
      only(v, 'trigger', ['type']);
      return { type: known };
    case 'contact_updated':
      only(v, 'trigger', ['type', 'condition']);
      return {
        type: known,
        condition: v.condition == null ? null : checkCondition(v.condition, 'trigger.condition'),
      };
    case 'event':
      only(v, 'trigger', ['type', 'event', 'where']);
      return {
        type: known,
        event: eventName(v.event, 'trigger.event'),
        where: checkWhere(v.where, 'trigger.where'),
      };
    case 'list_joined':
      only(v, 'trigger', ['type', 'list_id']);
      return { type: known, list_id: uuid(v.list_id, 'trigger.list_id', 'list') };
    case 'segment_entered':
      only(v, 'trigger', ['type', 'segment_id']);
      return { type: known, segment_id: uuid(v.segment_id, 'trigger.segment_id', 'segment') };
  }
}

export function parseReentry(v: unknown): Reentry {
  if (v === undefined || v === null) return { policy: 'once' };
  const o = v;
  if (!isObject(o))
    return fail('`reentry` must be {"policy": "once" | "always" | "cooldown", "cooldown_seconds"?}');
  only(o, 'reentry', ['policy', 'cooldown_seconds']);
  if (o.policy === 'once' || o.policy === 'always') {
    if (o.cooldown_seconds != null) fail('`reentry.cooldown_seconds` goes only with the policy "cooldown"');
    return { policy: o.policy };
  }
  if (o.policy === 'cooldown')
    return { policy: 'cooldown', cooldown_seconds: seconds(o.cooldown_seconds, 'reentry.cooldown_seconds') };
  return fail('`reentry.policy` must be once, always or cooldown');
}

/** A step's edge as given: undefined (the following step), null (the end) or a step id (checked later). */
export type Edge = string | null | undefined;
function edge(v: unknown, at: string): Edge {
  if (v === undefined || v === null) return v;
  if (typeof v !== 'string' || !STEP_ID.test(v)) fail(`\`${at}\` must be a step id or null`);
  return v as string;
}

/** Flow-level defaults a send step falls back to. */
export interface Defaults {
  from: string | null;
  from_name: string | null;
}

function parseSend(s: Obj, at: string, d: Defaults) {
  only(s, at, [
    'id',
    'type',
    'subject',
    'html',
    'template_id',
    'template_version',
    'variables',
    'from',
    'from_name',
    'topic_id',
    'next',
  ]);
  const html = text(s.html, `${at}.html`, 1_000_000);
  const templateId = s.template_id == null ? null : uuid(s.template_id, `${at}.template_id`, 'template');
  if (html !== null && templateId !== null) fail(`\`${at}\`: give \`html\` or \`template_id\`, not both`);
  if (html === null && templateId === null)
    fail(`\`${at}\` needs content: \`html\` (with \`subject\`) or \`template_id\` (a published template)`);
  const subject = text(s.subject, `${at}.subject`, 998, { oneLine: true });
  if (subject === null && templateId === null)
    fail(`\`${at}.subject\` is required (or give \`template_id\`)`);
  let version: number | null = null;
  if (s.template_version != null) {
    if (templateId === null) fail(`\`${at}.template_version\` needs \`template_id\``);
    const n = s.template_version;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 1_000_000)
      fail(`\`${at}.template_version\` must be a whole number from 1 to 1000000`);
    version = n as number;
  }
  let variables: Record<string, unknown> | null = null;
  if (s.variables != null) {
    if (templateId === null)
      fail(`\`${at}.variables\` go with \`template_id\`: inline \`html\` reads only \`contact\``);
    variables = templateValues(s.variables, `${at}.variables`);
  }
  let from = d.from;
  let fromName = text(s.from_name, `${at}.from_name`, 200, { oneLine: true });
  if (s.from != null) {
    if (typeof s.from !== 'string') fail(`\`${at}.from\` must be an address string`);
    const mailbox = parseMailbox(s.from as string, `${at}.from`);
    from = mailbox.address;
    if (fromName === null && mailbox.name) fromName = mailbox.name;
  }
  return {
    type: 'send' as const,
    subject,
    html,
    template_id: templateId,
    template_version: version,
    ...(variables === null ? {} : { variables }),
    from,
    from_name: fromName ?? d.from_name,
    ...(s.topic_id == null ? {} : { topic_id: uuid(s.topic_id, `${at}.topic_id`, 'topic') }),
  };
}

function parseWindow(v: unknown, at: string): WaitWindow {
  if (!isObject(v)) return fail(`\`${at}\` must be {"from_hour", "to_hour", "days"?}`);
  only(v, at, ['from_hour', 'to_hour', 'days']);
  const hour = (h: unknown, name: string, min: number, max: number) => {
    if (typeof h !== 'number' || !Number.isInteger(h) || h < min || h > max)
      fail(`\`${at}.${name}\` must be a whole hour from ${min} to ${max}`);
    return h as number;
  };
  const from = hour(v.from_hour, 'from_hour', 0, 23);
  const to = hour(v.to_hour, 'to_hour', 1, 24);
  if (to <= from) fail(`\`${at}\`: \`to_hour\` must be after \`from_hour\``);
  if (v.days == null) return { from_hour: from, to_hour: to };
  const days = v.days;
  if (
    !Array.isArray(days) ||
    days.length === 0 ||
    days.length > 7 ||
    new Set(days).size !== days.length ||
    !days.every((n) => Number.isInteger(n) && n >= 0 && n <= 6)
  )
    fail(`\`${at}.days\` must be distinct week days, 0 (Sunday) to 6 (Saturday)`);
  return { from_hour: from, to_hour: to, days: [...(days as number[])].sort() };
}

function parseWait(s: Obj, at: string) {
  only(s, at, ['id', 'type', 'duration_seconds', 'until', 'until_property', 'window', 'next']);
  const given = ['duration_seconds', 'until', 'until_property', 'window'].filter((k) => s[k] != null);
  if (given.length !== 1)
    fail(`\`${at}\` needs exactly one of \`duration_seconds\`, \`until\`, \`until_property\` or \`window\``);
  if (s.duration_seconds != null)
    return { type: 'wait' as const, duration_seconds: seconds(s.duration_seconds, `${at}.duration_seconds`) };
  if (s.until != null) {
    const u = s.until;
    if (!parseIsoDate(u)) fail(`\`${at}.until\` must be an ISO 8601 date or moment`);
    return { type: 'wait' as const, until: new Date(u as string).toISOString() };
  }
  if (s.until_property != null) {
    const name = typeof s.until_property === 'string' ? s.until_property.replace(/^properties\./, '') : '';
    if (!PROPERTY_KEY.test(name))
      fail(`\`${at}.until_property\` must name a contact property, e.g. "properties.trial_ends"`);
    return { type: 'wait' as const, until_property: name };
  }
  return { type: 'wait' as const, window: parseWindow(s.window, `${at}.window`) };
}

function parseUpdate(s: Obj, at: string) {
  only(s, at, ['id', 'type', 'set_properties', 'join_list_id', 'leave_list_id', 'next']);
  const props =
    s.set_properties == null
      ? null
      : checkProperties(s.set_properties, `${at}.set_properties`, { allowNull: true });
  const join = s.join_list_id == null ? null : uuid(s.join_list_id, `${at}.join_list_id`, 'list');
  const leave = s.leave_list_id == null ? null : uuid(s.leave_list_id, `${at}.leave_list_id`, 'list');
  if ((props === null || Object.keys(props).length === 0) && join === null && leave === null)
    fail(`\`${at}\` needs \`set_properties\`, \`join_list_id\` or \`leave_list_id\``);
  return { type: 'update_contact' as const, set_properties: props, join_list_id: join, leave_list_id: leave };
}

function parseWebhookStep(s: Obj, at: string) {
  only(s, at, ['id', 'type', 'url', 'next']);
  let url: URL | null = null;
  try {
    url = typeof s.url === 'string' && s.url.length <= 2000 ? new URL(s.url) : null;
  } catch {}
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:'))
    fail(`\`${at}.url\` must be an absolute https URL`);
  return { type: 'webhook' as const, url: (url as URL).toString() };
}

export type Draft = { step: Obj; edges: Record<string, Edge>; branchEdges: Edge[] };

/** One step's fields (edges apart), by type. */
export function parseStep(raw: unknown, i: number, d: Defaults): Draft {
  const at = `steps[${i}]`;
  if (!isObject(raw)) return fail(`\`${at}\` must be an object with a \`type\``);
  const type = STEP_TYPES.find((t) => t === raw.type);
  if (!type) return fail(`\`${at}.type\` must be one of ${STEP_TYPES.join(', ')}`);
  const edges: Record<string, Edge> = {};
  const branchEdges: Edge[] = [];
  if (type !== 'exit' && type !== 'branch') edges.next = edge(raw.next, `${at}.next`);
  let step: Obj;
  if (type === 'send') step = parseSend(raw, at, d);
  else if (type === 'wait') step = parseWait(raw, at);
  else if (type === 'update_contact') step = parseUpdate(raw, at);
  else if (type === 'webhook') step = parseWebhookStep(raw, at);
  else if (type === 'exit') {
    only(raw, at, ['id', 'type']);
    step = { type };
  } else if (type === 'wait_for_event') {
    only(raw, at, ['id', 'type', 'event', 'where', 'timeout_seconds', 'next', 'timeout_next']);
    edges.timeout_next = edge(raw.timeout_next, `${at}.timeout_next`);
    step = {
      type,
      event: eventName(raw.event, `${at}.event`),
      where: checkWhere(raw.where, `${at}.where`),
      timeout_seconds: seconds(raw.timeout_seconds, `${at}.timeout_seconds`),
    };
  } else {
    only(raw, at, ['id', 'type', 'branches', 'default_next']);
    const list = raw.branches;
    if (!Array.isArray(list) || list.length === 0 || list.length > MAX_BRANCHES)
      fail(`\`${at}.branches\` must hold 1 to ${MAX_BRANCHES} branches of {"condition", "next"}`);
    const branches = (list as unknown[]).map((b, j) => {
      if (!isObject(b)) return fail(`\`${at}.branches[${j}]\` must be {"condition", "next"}`);
      only(b, `${at}.branches[${j}]`, ['condition', 'next']);
      branchEdges.push(edge(b.next, `${at}.branches[${j}].next`));
      return { condition: checkCondition(b.condition, `${at}.branches[${j}].condition`) };
    });
    edges.default_next = edge(raw.default_next, `${at}.default_next`);
    step = { type, branches };
  }
  return { step, edges, branchEdges };
}
