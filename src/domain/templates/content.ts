import type { Selectable } from 'kysely';
import type { TemplateVariable, TemplateVersionsTable } from '../../db/schema.ts';
import { parseMailbox } from '../core/addresses.ts';
import { ValidationError } from '../core/errors.ts';
import { compileMjml } from './mjml.ts';
import { PREHEADER_END, PREHEADER_START, sampleVariables } from './render.ts';
import { type LiquidField, namesReadInPool, renderInPool } from './render-pool.ts';

/** A template's content as the API takes it (create, or the merged result of an edit). */
export interface TemplateContentInput {
  subject: string;
  mjml?: string | null;
  html?: string | null;
  text?: string | null;
  preheader?: string | null;
  from?: string | null;
  reply_to?: string | null;
  variables?: TemplateVariable[];
}

/** The columns a checked draft or version stores (the content the two tables share). */
export type CheckedContent = Omit<
  Selectable<TemplateVersionsTable>,
  'template_id' | 'version' | 'project_id' | 'published_at'
>;

const MAX_SOURCE = 500_000;
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const TYPES = ['string', 'number', 'boolean', 'date'];
const SAMPLE_CONTACT = {
  email: 'someone@example.com',
  first_name: 'Sam',
  last_name: 'Sample',
  properties: {},
};

function checkVariables(variables: TemplateVariable[]): TemplateVariable[] {
  if (variables.length > 100) throw new ValidationError('`variables`: at most 100 may be declared');
  const seen = new Set<string>();
  return variables.map((v, i) => {
    const at = `\`variables[${i}]\``;
    if (!VARIABLE_NAME.test(v.name) || v.name === 'contact')
      throw new ValidationError(
        `${at}.name must be letters, digits and _ (not starting with a digit, not "contact"), got "${String(v.name).slice(0, 70)}"`,
      );
    if (seen.has(v.name)) throw new ValidationError(`${at}: \`${v.name}\` is declared twice`);
    seen.add(v.name);
    if (!TYPES.includes(v.type)) throw new ValidationError(`${at}.type must be one of ${TYPES.join(', ')}`);
    if (v.default !== undefined) {
      const ok =
        v.type === 'number'
          ? typeof v.default === 'number'
          : v.type === 'boolean'
            ? typeof v.default === 'boolean'
            : typeof v.default === 'string';
      if (!ok) throw new ValidationError(`${at}.default must be a ${v.type === 'date' ? 'string' : v.type}`);
    }
    return v.default === undefined
      ? { name: v.name, type: v.type }
      : { name: v.name, type: v.type, default: v.default };
  });
}

/** The preheader: the first line a mail client shows after the subject, hidden in the message itself. */
export function withPreheader(html: string, preheader: string | null): string {
  if (!preheader) return html;
  // no tiny font size: SpamAssassin scores 1px text before a word as invisible (FONT_INVIS_MSGID, +1.0)
  const hidden = `${PREHEADER_START}<div style="display:none;max-height:0;max-width:0;opacity:0;overflow:hidden;mso-hide:all">${preheader}</div>${PREHEADER_END}`;
  const body = /<body[^>]*>/i.exec(html);
  return body ? html.replace(body[0], `${body[0]}${hidden}`) : hidden + html;
}

/** Names every template reads without declaring them (`preferences_url`: marketing mail's preference page). */
const BUILT_IN = ['contact', 'preferences_url'];

/** The typo guard: every name a field reads is a declared variable, `contact` or `preferences_url`. */
function checkNamesRead(field: string, names: string[], declared: Set<string>) {
  const unknown = names.filter((n) => !BUILT_IN.includes(n) && !declared.has(n));
  if (unknown.length > 0)
    throw new ValidationError(
      `\`${field}\` uses ${unknown.map((n) => `\`${n}\``).join(', ')}, which ${unknown.length > 1 ? 'are' : 'is'} not declared: add ${unknown.length > 1 ? 'them' : 'it'} to \`variables\` or fix the name`,
    );
}

/**
 * Checks a template's content at save time, so nothing about it can fail at send time: MJML compiles
 * strictly, Liquid parses (no unknown tag or filter), every name read is declared, and a trial render
 * with sample values stays within the limits. Returns the columns to store, MJML compiled once. The
 * heavy steps run in pool threads, queued behind `owner`'s (the project's) other template work.
 */
export async function checkContent(input: TemplateContentInput, owner: string): Promise<CheckedContent> {
  const subject = input.subject;
  if (subject.trim() === '' || subject.length > 998)
    throw new ValidationError('`subject` must be 1 to 998 characters');
  const hasMjml = input.mjml !== undefined && input.mjml !== null;
  const hasHtml = input.html !== undefined && input.html !== null;
  if (hasMjml === hasHtml)
    throw new ValidationError('Give the template a body: either `mjml` or `html` (not both)');
  const source = (hasMjml ? input.mjml : input.html) as string;
  const sourceField = hasMjml ? 'mjml' : 'html';
  // an empty body would pass here and fail every send
  if (source.trim() === '') throw new ValidationError(`\`${sourceField}\` must not be empty`);
  if (source.length > MAX_SOURCE || (input.text?.length ?? 0) > MAX_SOURCE)
    throw new ValidationError(`\`${sourceField}\` and \`text\` may be at most ${MAX_SOURCE} characters`);
  if ((input.preheader?.length ?? 0) > 500)
    throw new ValidationError('`preheader` must be at most 500 characters');
  if (input.from) parseMailbox(input.from, 'from');
  if (input.reply_to) parseMailbox(input.reply_to, 'reply_to');
  const variables = checkVariables(input.variables ?? []);
  const declared = new Set(variables.map((v) => v.name));

  const fields: LiquidField[] = [
    { field: 'subject', value: subject, html: false },
    { field: sourceField, value: source, html: true },
    ...(input.text == null ? [] : [{ field: 'text', value: input.text, html: false }]),
    ...(input.preheader == null ? [] : [{ field: 'preheader', value: input.preheader, html: true }]),
  ];
  const names = await namesReadInPool(owner, fields);
  for (const [i, { field }] of fields.entries()) checkNamesRead(field, names[i], declared);
  const compiled = withPreheader(
    hasMjml ? await compileMjml(source, owner) : source,
    input.preheader ?? null,
  );
  const content: CheckedContent = {
    subject,
    mjml: hasMjml ? source : null,
    html: hasHtml ? source : null,
    text_body: input.text ?? null,
    preheader: input.preheader ?? null,
    from_address: input.from ?? null,
    reply_to: input.reply_to ?? null,
    variables,
    compiled_html: compiled,
  };
  // a hostile template (a huge loop, a multi-megabyte output) is refused here, not at send time
  await renderInPool(owner, {
    source: { cacheKey: '', ...content },
    given: sampleVariables(variables),
    contact: SAMPLE_CONTACT,
  });
  return content;
}
