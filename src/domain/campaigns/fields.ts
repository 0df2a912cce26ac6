import { sql } from 'kysely';
import type { CampaignsTable } from '../../db/schema.ts';
import { parseMailbox } from '../core/addresses.ts';
import type { DomainContext } from '../core/context.ts';
import { NotFoundError, ValidationError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import { checkFromAddress } from '../emails/accept.ts';
import { checkTags } from '../emails/validate.ts';
import type { ProjectFacts } from '../plans/project-facts.ts';
import { findTemplate } from '../templates/templates.ts';

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
  html?: string | null;
  list_ids?: string[];
  segment_ids?: string[];
  exclude_list_ids?: string[];
  exclude_segment_ids?: string[];
  tracking?: { opens?: boolean; clicks?: boolean };
  tags?: { name: string; value: string }[];
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
  html: string | null;
  list_ids: string[];
  segment_ids: string[];
  exclude_list_ids: string[];
  exclude_segment_ids: string[];
  track_opens: boolean;
  track_clicks: boolean;
  tags: { name: string; value: string }[];
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
  html: null,
  list_ids: [],
  segment_ids: [],
  exclude_list_ids: [],
  exclude_segment_ids: [],
  track_opens: true,
  track_clicks: true,
  tags: [],
};

const AUDIENCE_FIELDS = ['list_ids', 'segment_ids', 'exclude_list_ids', 'exclude_segment_ids'] as const;

/**
 * The stored fields after applying a request to `current`: only the fields it gives change, an
 * explicit null clears one, and giving one kind of content (template or HTML) drops the other.
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
  if (input.preheader !== undefined) next.preheader = input.preheader;
  if (input.template_id !== undefined) next.template_id = input.template_id;
  if (input.template_version !== undefined) next.template_version = input.template_version;
  if (input.html !== undefined) next.html = input.html;
  if (hasTemplate) next.html = null;
  if (hasHtml) {
    next.template_id = null;
    next.template_version = null;
  }
  if (next.template_id === null) next.template_version = null;
  for (const field of AUDIENCE_FIELDS) {
    const ids = input[field];
    if (ids !== undefined) next[field] = [...new Set(ids.map((id) => id.toLowerCase()))];
  }
  if (input.tracking?.opens !== undefined) next.track_opens = input.tracking.opens;
  if (input.tracking?.clicks !== undefined) next.track_clicks = input.tracking.clicks;
  if (input.tags !== undefined) next.tags = checkTags(input.tags);
  return next;
}

function checkText(value: string | null, field: string, max: number, oneLine: boolean) {
  if (value === null) return;
  if (value.trim() === '') throw new ValidationError(`\`${field}\` must not be empty`);
  if (value.length > max) throw new ValidationError(`\`${field}\` must be at most ${max} characters`);
  if (oneLine && /[\r\n]/.test(value)) throw new ValidationError(`\`${field}\` must not contain line breaks`);
}

/** The template a campaign names, in this project and with a published version to send. */
async function checkTemplate(ctx: DomainContext, projectId: string, fields: CampaignFields) {
  const id = fields.template_id as string;
  const missing = new ValidationError(`\`template_id\`: no template ${id.slice(0, 100)} in this project`);
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
        `\`template_version\`: template ${template.id} has no version ${fields.template_version}`,
      );
  } else if (template.latest_version === 0) {
    throw new ValidationError(
      `\`template_id\`: template ${template.id} has no published version yet: publish it with POST /v1/templates/${template.id}/publish`,
    );
  }
  return template;
}

/** Every id of the audience names a list or segment of this project (else 400 naming it). */
async function checkAudience(ctx: DomainContext, projectId: string, fields: CampaignFields) {
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
}

/** Checks a campaign as a whole: name, sender, content, subject and audience; gives the row values. */
export async function checkCampaign(ctx: DomainContext, facts: ProjectFacts, fields: CampaignFields) {
  if (typeof fields.name !== 'string' || fields.name.trim() === '' || fields.name.length > 200)
    throw new ValidationError('`name` must be 1 to 200 characters');
  checkText(fields.from_name, 'from_name', 200, true);
  checkText(fields.subject, 'subject', 998, true);
  checkText(fields.preheader, 'preheader', 500, true);
  if (fields.html !== null && fields.html.trim() === '')
    throw new ValidationError('`html` must not be empty');
  if (fields.template_id === null && fields.html === null)
    throw new ValidationError('Give the campaign content: `template_id` (a published template) or `html`');
  const template = fields.template_id === null ? null : await checkTemplate(ctx, facts.id, fields);
  if (fields.subject === null && !template)
    throw new ValidationError('Field `subject` is required (or give `template_id`)');
  const from =
    fields.from_address ??
    (template?.from_address ? parseMailbox(template.from_address, 'from').address : null);
  if (from === null)
    throw new ValidationError('Field `from` is required (or a template with a default `from`)');
  checkFromAddress(ctx, facts, from);
  await checkAudience(ctx, facts.id, fields);
  const { tags, ...rest } = fields;
  return { ...rest, name: fields.name.trim(), tags: JSON.stringify(tags) } satisfies Partial<
    Record<keyof CampaignsTable, unknown>
  >;
}
