import { sql } from 'kysely';
import type { AbTestColumn, CampaignsTable } from '../../db/schema.ts';
import { parseMailbox } from '../core/addresses.ts';
import type { DomainContext } from '../core/context.ts';
import { NotFoundError, ValidationError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import { minutesOf } from '../core/local-time.ts';
import { checkFromAddress } from '../emails/send-checks.ts';
import { checkTags } from '../emails/validate.ts';
import { requireFeature } from '../plans/plans.ts';
import type { ProjectFacts } from '../plans/project-facts.ts';
import { applyRate, type RateInput } from '../shaping/sending-rates.ts';
import { templateValues } from '../templates/message-checks.ts';
import { findTemplate } from '../templates/templates.ts';
import { checkCampaignMessage, withVariant } from './content.ts';

/** A campaign as the API receives it (POST takes it whole, PATCH any part; other fields are ignored). */
export interface CampaignInput {
  name?: string;
  from?: string | null;
  from_name?: string | null;
  reply_to?: string | null;
  subject?: string | null;
  preheader?: string | null;
  template_id?: string | null;
  template_version?: number | null;
  /** Values for the template's variables. */
  variables?: Record<string, unknown> | null;
  html?: string | null;
  list_ids?: string[];
  segment_ids?: string[];
  exclude_list_ids?: string[];
  exclude_segment_ids?: string[];
  /** Only contacts subscribed to this topic of the project get the campaign; null: no topic. */
  topic_id?: string | null;
  /** `HH:MM`: each recipient's message leaves at this time in their zone; null: as soon as it can. */
  local_time?: string | null;
  tracking?: { opens?: boolean; clicks?: boolean };
  tags?: { name: string; value: string }[];
  ab_test?: AbTestInput | null;
  rate?: RateInput | null;
}

/** An A/B test as the API receives it (see `checkAbTest`). */
export interface AbTestInput {
  variants: {
    name?: string;
    subject?: string;
    html?: string;
    template_id?: string;
    template_version?: number | null;
    variables?: Record<string, unknown>;
    from_name?: string;
  }[];
  test_share: number;
  winner_by: string;
  wait_minutes?: number;
  wait_seconds?: number;
}

/** The columns a campaign's content, sender and audience are stored in. */
export interface CampaignFields {
  name: string;
  from_address: string | null;
  from_name: string | null;
  reply_to: string | null;
  subject: string | null;
  preheader: string | null;
  template_id: string | null;
  template_version: number | null;
  template_variables: Record<string, unknown> | null;
  html: string | null;
  list_ids: string[];
  segment_ids: string[];
  exclude_list_ids: string[];
  exclude_segment_ids: string[];
  topic_id: string | null;
  /** Minutes after midnight, in each recipient's zone. */
  local_time: number | null;
  track_opens: boolean;
  track_clicks: boolean;
  tags: { name: string; value: string }[];
  /** As stored, or as given until `checkCampaign` checks it. */
  ab_test: AbTestInput | null;
  rate_per_second: number | null;
  rate_per_hour: number | null;
}

export const EMPTY_CAMPAIGN: CampaignFields = {
  name: '',
  from_address: null,
  from_name: null,
  reply_to: null,
  subject: null,
  preheader: null,
  template_id: null,
  template_version: null,
  template_variables: null,
  html: null,
  list_ids: [],
  segment_ids: [],
  exclude_list_ids: [],
  exclude_segment_ids: [],
  topic_id: null,
  local_time: null,
  track_opens: true,
  track_clicks: true,
  tags: [],
  ab_test: null,
  rate_per_second: null,
  rate_per_hour: null,
};

/** How long an A/B test waits for results before its winner is picked, when the request gives no wait. */
export const DEFAULT_AB_WAIT_MINUTES = 240;
const VARIANT_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const WINNER_RULES = ['opens', 'clicks', 'revenue', 'manual'] as const;

function wholeNumber(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
    throw new ValidationError(`\`${field}\` must be a whole number from ${min} to ${max}`);
  return value;
}

/** One variant of an A/B test: its name (a tag value; A, B, ... when not given) and what it overrides. */
function checkVariant(v: AbTestInput['variants'][number], i: number): AbTestColumn['variants'][number] {
  const at = `ab_test.variants[${i}]`;
  if (typeof v !== 'object' || v === null) throw new ValidationError(`\`${at}\` must be an object`);
  const name = v.name ?? String.fromCharCode(65 + i);
  if (typeof name !== 'string' || !VARIANT_NAME.test(name))
    throw new ValidationError(
      `\`${at}.name\` may contain only letters, digits, _ and - (1 to 64 characters)`,
    );
  if (v.html !== undefined && v.template_id !== undefined)
    throw new ValidationError(`\`${at}\`: give \`template_id\` or \`html\`, not both`);
  if (v.template_version !== undefined && v.template_version !== null && v.template_id === undefined)
    throw new ValidationError(`\`${at}.template_version\` needs the variant's \`template_id\``);
  if (v.variables !== undefined && v.template_id === undefined)
    throw new ValidationError(`\`${at}.variables\` go with the variant's \`template_id\``);
  const out: AbTestColumn['variants'][number] = { name };
  for (const key of ['subject', 'html', 'template_id', 'from_name'] as const) {
    const value = v[key];
    if (value === undefined) continue;
    if (typeof value !== 'string') throw new ValidationError(`\`${at}.${key}\` must be a string`);
    out[key] = key === 'template_id' ? value.toLowerCase() : value;
  }
  if (v.template_id !== undefined)
    out.template_version =
      v.template_version == null
        ? null
        : wholeNumber(v.template_version, `${at}.template_version`, 1, 1_000_000);
  if (v.variables !== undefined) out.variables = templateValues(v.variables, `${at}.variables`);
  return out;
}

/**
 * An A/B test's settings, checked and completed: 2 to 8 variants with distinct names, the test
 * share (1 to 100 % of the audience, split evenly; 100 sends every recipient a variant and picks no
 * winner), the rule (`opens`, `clicks` and `revenue` need the tracking they count) and the wait
 * (`wait_minutes` 1 to 10,080, or `wait_seconds` 1 to 604,800 for short trials; 240 minutes when
 * neither is given). The variants' content is checked with the campaign's (`checkCampaign`).
 */
export function checkAbTest(input: AbTestInput, tracking: { opens: boolean; clicks: boolean }): AbTestColumn {
  if (typeof input !== 'object' || input === null) throw new ValidationError('`ab_test` must be an object');
  if (!Array.isArray(input.variants) || input.variants.length < 2 || input.variants.length > 8)
    throw new ValidationError('`ab_test.variants` must hold 2 to 8 variants');
  const variants = input.variants.map(checkVariant);
  const names = variants.map((v) => v.name.toLowerCase());
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice !== undefined)
    throw new ValidationError(
      `\`ab_test.variants\`: the name "${twice}" is given twice; each variant needs its own`,
    );
  const winnerBy = WINNER_RULES.find((r) => r === input.winner_by);
  if (!winnerBy) throw new ValidationError('`ab_test.winner_by` must be opens, clicks, revenue or manual');
  if (winnerBy === 'opens' && !tracking.opens)
    throw new ValidationError('`ab_test.winner_by`: opens needs open tracking (`tracking.opens: true`)');
  if ((winnerBy === 'clicks' || winnerBy === 'revenue') && !tracking.clicks)
    throw new ValidationError(
      `\`ab_test.winner_by\`: ${winnerBy} needs click tracking (\`tracking.clicks: true\`)`,
    );
  const out: AbTestColumn = {
    variants,
    test_share: wholeNumber(input.test_share, 'ab_test.test_share', 1, 100),
    winner_by: winnerBy,
  };
  if (input.wait_minutes !== undefined && input.wait_seconds !== undefined)
    throw new ValidationError('`ab_test`: give `wait_minutes` or `wait_seconds`, not both');
  if (input.wait_seconds !== undefined)
    out.wait_seconds = wholeNumber(input.wait_seconds, 'ab_test.wait_seconds', 1, 604_800);
  else
    out.wait_minutes = wholeNumber(
      input.wait_minutes ?? DEFAULT_AB_WAIT_MINUTES,
      'ab_test.wait_minutes',
      1,
      10_080,
    );
  return out;
}

const AUDIENCE_FIELDS = ['list_ids', 'segment_ids', 'exclude_list_ids', 'exclude_segment_ids'] as const;

/**
 * The stored fields after applying a request to `current`: only the fields it gives change, an
 * explicit null clears one, and giving one kind of content (template or HTML) drops the other. A
 * campaign without a subject sends its template's: choosing another template without one clears it.
 */
export function applyInput(current: CampaignFields, input: CampaignInput): CampaignFields {
  const hasTemplate = typeof input.template_id === 'string';
  const hasHtml = typeof input.html === 'string';
  if (hasTemplate && hasHtml) throw new ValidationError('Give `template_id` or `html`, not both');
  const next: CampaignFields = { ...current };
  if (input.name !== undefined) next.name = input.name;
  if (input.from !== undefined) {
    const mailbox = input.from === null ? null : parseMailbox(input.from, 'from');
    next.from_address = mailbox?.address ?? null;
    if (mailbox?.name && input.from_name === undefined) next.from_name = mailbox.name;
  }
  if (input.from_name !== undefined) next.from_name = input.from_name;
  if (input.reply_to !== undefined)
    next.reply_to = input.reply_to === null ? null : parseMailbox(input.reply_to, 'reply_to').address;
  if (input.subject !== undefined) next.subject = input.subject;
  // another template chosen without a subject takes the template's: the old one, written for other
  // content, would silently replace it
  else if (hasTemplate && input.template_id?.toLowerCase() !== current.template_id?.toLowerCase())
    next.subject = null;
  if (input.preheader !== undefined) next.preheader = input.preheader;
  if (input.template_id !== undefined) next.template_id = input.template_id;
  if (input.template_version !== undefined) next.template_version = input.template_version;
  if (input.variables !== undefined)
    next.template_variables = input.variables === null ? null : templateValues(input.variables, 'variables');
  if (input.html !== undefined) next.html = input.html;
  if (hasTemplate) next.html = null;
  if (hasHtml) {
    next.template_id = null;
    next.template_version = null;
    // values for a template no longer used would be refused by the content checks
    if (input.variables === undefined) next.template_variables = null;
  }
  if (next.template_id === null) next.template_version = null;
  for (const field of AUDIENCE_FIELDS) {
    const ids = input[field];
    if (ids !== undefined) next[field] = [...new Set(ids.map((id) => id.toLowerCase()))];
  }
  if (input.topic_id !== undefined)
    next.topic_id = typeof input.topic_id === 'string' ? input.topic_id.toLowerCase() : input.topic_id;
  if (input.local_time !== undefined) next.local_time = localTimeInput(input.local_time);
  if (input.tracking?.opens !== undefined) next.track_opens = input.tracking.opens;
  if (input.tracking?.clicks !== undefined) next.track_clicks = input.tracking.clicks;
  if (input.tags !== undefined) next.tags = checkTags(input.tags);
  if (input.ab_test !== undefined) next.ab_test = input.ab_test;
  if (input.rate !== undefined)
    Object.assign(
      next,
      input.rate === null ? { rate_per_second: null, rate_per_hour: null } : applyRate(next, input.rate),
    );
  return next;
}

/** `local_time` as minutes after midnight (null: none), or 400. */
function localTimeInput(value: unknown): number | null {
  if (value === null) return null;
  const minutes = minutesOf(value);
  if (minutes === null)
    throw new ValidationError(
      '`local_time` must be a 24-hour time such as "09:00" (each recipient\'s local time), or null',
    );
  return minutes;
}

function checkText(value: string | null, field: string, max: number, oneLine: boolean) {
  if (value === null) return;
  if (value.trim() === '') throw new ValidationError(`\`${field}\` must not be empty`);
  if (value.length > max) throw new ValidationError(`\`${field}\` must be at most ${max} characters`);
  if (oneLine && /[\r\n]/.test(value)) throw new ValidationError(`\`${field}\` must not contain line breaks`);
}

/** The template a campaign names, in this project and with a published version to send. */
async function checkTemplate(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  fields: CampaignFields,
  at: string,
) {
  const id = fields.template_id as string;
  const missing = new ValidationError(
    `\`${at}template_id\`: no template ${id.slice(0, 100)} in this project`,
  );
  const template = await findTemplate(ctx, projectId, id).catch((err) => {
    throw err instanceof NotFoundError ? missing : err;
  });
  if (fields.template_version !== null) {
    const version = await ctx.db
      .selectFrom('template_versions')
      .select('version')
      .where('template_id', '=', template.id)
      .where('version', '=', fields.template_version)
      .executeTakeFirst();
    if (!version)
      throw new ValidationError(
        `\`${at}template_version\`: template ${template.id} has no version ${fields.template_version}`,
      );
  } else if (template.latest_version === 0) {
    throw new ValidationError(
      `\`${at}template_id\`: template ${template.id} has no published version yet: publish it in Templates (POST /v1/templates/${template.id}/publish)`,
    );
  }
  return template;
}

/** Every id of the audience names a list, segment or topic of this project (else 400 naming it). */
async function checkAudience(ctx: Pick<DomainContext, 'db'>, projectId: string, fields: CampaignFields) {
  const kinds = [
    { table: 'lists', noun: 'list', ids: [...fields.list_ids, ...fields.exclude_list_ids] },
    { table: 'segments', noun: 'segment', ids: [...fields.segment_ids, ...fields.exclude_segment_ids] },
  ] as const;
  for (const { table, noun, ids } of kinds) {
    const bad = ids.find((id) => !isUuid(id));
    if (bad !== undefined) throw new ValidationError(`no ${noun} ${bad.slice(0, 100)} in this project`);
    if (ids.length === 0) continue;
    const { rows } = await sql<{ id: string }>`select id from ${sql.table(table)}
      where project_id = ${projectId} and id = any(${ids}::uuid[])`.execute(ctx.db);
    const found = new Set(rows.map((r) => r.id));
    const missing = ids.find((id) => !found.has(id));
    if (missing !== undefined) throw new ValidationError(`no ${noun} ${missing} in this project`);
  }
  if (fields.topic_id === null) return;
  const topic =
    isUuid(fields.topic_id) &&
    (await ctx.db
      .selectFrom('topics')
      .select('id')
      .where('project_id', '=', projectId)
      .where('id', '=', fields.topic_id)
      .executeTakeFirst());
  if (!topic)
    throw new ValidationError(
      `\`topic_id\`: no topic ${String(fields.topic_id).slice(0, 100)} in this project (GET /v1/topics)`,
    );
}

/**
 * The sender and content a campaign (or one A/B variant of it, `at` naming it in errors) sends:
 * content given, subject given (or the template's), `from` on a verified domain, and the message
 * itself checked as a template is (Liquid, names read, the template's variables, a trial render).
 */
async function checkContent(ctx: DomainContext, facts: ProjectFacts, fields: CampaignFields, at = '') {
  checkText(fields.from_name, `${at}from_name`, 200, true);
  checkText(fields.subject, `${at}subject`, 998, true);
  if (fields.html !== null && fields.html.trim() === '')
    throw new ValidationError(`\`${at}html\` must not be empty`);
  if (fields.template_id === null && fields.html === null)
    throw new ValidationError('Give the campaign content: `template_id` (a published template) or `html`');
  const template = fields.template_id === null ? null : await checkTemplate(ctx, facts.id, fields, at);
  if (fields.subject === null && !template)
    throw new ValidationError(`Field \`${at}subject\` is required (or give \`template_id\`)`);
  const from =
    fields.from_address ??
    (template?.from_address ? parseMailbox(template.from_address, 'from').address : null);
  if (from === null)
    throw new ValidationError('Field `from` is required (or a template with a default `from`)');
  checkFromAddress(ctx, facts, from);
  await checkCampaignMessage(ctx, { ...fields, project_id: facts.id }, at);
}

/**
 * Checks a campaign as a whole: name, sender, content, subject and audience, and its A/B test
 * (402 on a plan without `ab_testing`, before anything else; each variant's content as the
 * campaign's); gives the row values.
 */
export async function checkCampaign(ctx: DomainContext, facts: ProjectFacts, fields: CampaignFields) {
  if (fields.ab_test !== null) requireFeature(facts.plan, 'ab_testing');
  if (typeof fields.name !== 'string' || fields.name.trim() === '' || fields.name.length > 200)
    throw new ValidationError('`name` must be 1 to 200 characters');
  checkText(fields.preheader, 'preheader', 500, true);
  await checkContent(ctx, facts, fields);
  const abTest =
    fields.ab_test === null
      ? null
      : checkAbTest(fields.ab_test, { opens: fields.track_opens, clicks: fields.track_clicks });
  for (const [i, variant] of (abTest?.variants ?? []).entries())
    await checkContent(ctx, facts, withVariant(fields, variant), `ab_test.variants[${i}].`);
  await checkAudience(ctx, facts.id, fields);
  const { tags, ab_test: _ab, template_variables, ...rest } = fields;
  return {
    ...rest,
    name: fields.name.trim(),
    template_variables: template_variables === null ? null : JSON.stringify(template_variables),
    tags: JSON.stringify(tags),
    ab_test: abTest === null ? null : JSON.stringify(abTest),
  } satisfies Partial<Record<keyof CampaignsTable, unknown>>;
}
