import { createHash } from 'node:crypto';
import type { TemplateData } from '../../db/schema.ts';
import { PREHEADER_END, PREHEADER_START } from '../../mail/html-to-text.ts';
import { ValidationError } from '../core/errors.ts';
import { withPreheader } from './content.ts';
import { type Rendered, type RenderSource, resolveVariables, type TemplateContact } from './render.ts';
import { namesReadInPool, renderInPool } from './render-pool.ts';
import type { ResolvedVersion } from './send.ts';

/**
 * The messages of campaigns and flow send steps: built from their own fields (subject, HTML, text,
 * preheader) over a published template or inline, rendered per recipient with Liquid over
 * `contact` (and the template's variables). `messageSource` is the one way such a message becomes
 * what render.ts renders; `checkMessageContent` is the one save-time check of such a message, the
 * checks a template gets when it is saved, so nothing about it fails when it is sent.
 */
export interface MessageInput {
  /** The message's own fields; null or absent when not given (a template's own then apply). */
  subject: string | null;
  html: string | null;
  text?: string | null;
  /** Replaces a template's preheader; hidden at the top of inline HTML. */
  preheader?: string | null;
  /** The published version the message is made from; null for inline `html`. */
  template: ResolvedVersion | null;
  /** Values for the template's variables (`variables` beside `template_id`). */
  variables?: Record<string, unknown> | null;
}

/** What a message reads of its contact (`contact.first_name`, `contact.properties.plan`). */
const CONTACT_FIELDS = ['email', 'first_name', 'last_name', 'properties'];
const SAMPLE_CONTACT: TemplateContact = {
  email: 'someone@example.com',
  first_name: 'Sam',
  last_name: 'Sample',
  properties: {},
};

/** Values for a template's variables as a request gives them (checked against the template later). */
export function templateValues(value: unknown, field: string): Record<string, unknown> {
  if (
    typeof value !== 'object' ||
    value === null ||
    Array.isArray(value) ||
    Object.keys(value).length > 100 ||
    !Object.values(value).every((v) => ['string', 'number', 'boolean'].includes(typeof v))
  )
    throw new ValidationError(
      `\`${field}\` must be an object of at most 100 values (strings, numbers or booleans) for the template's variables`,
    );
  return value as Record<string, unknown>;
}

/** The HTML with its preheader (as content.ts `withPreheader` places it) replaced by another. */
export function replacePreheader(html: string, preheader: string | null | undefined): string {
  if (!preheader) return html;
  const start = html.indexOf(PREHEADER_START);
  const end = start < 0 ? -1 : html.indexOf(PREHEADER_END, start);
  const bare = end < 0 ? html : html.slice(0, start) + html.slice(end + PREHEADER_END.length);
  return withPreheader(bare, preheader);
}

/**
 * What every recipient's message is rendered from: the template's parts, each replaced by the
 * message's own when given (subject, text, preheader), or the inline HTML with the preheader hidden
 * at its top. `cacheKey` names the message (its edit time included) for the parsed-Liquid cache.
 */
export function messageSource(message: MessageInput, cacheKey: string): RenderSource {
  const { template } = message;
  if (template === null)
    return {
      cacheKey,
      subject: message.subject ?? '',
      compiled_html: withPreheader(message.html ?? '', message.preheader ?? null),
      text_body: message.text ?? null,
      variables: [],
    };
  return {
    ...template,
    // an empty key (a trial render) is never cached: the message's own fields are not the version's
    cacheKey: cacheKey && `${template.cacheKey}#${cacheKey}`,
    subject: message.subject ?? template.subject,
    compiled_html: replacePreheader(template.compiled_html, message.preheader),
    text_body: message.text ?? template.text_body,
  };
}

/**
 * What a stored template email is rendered from again (at delivery, or when read): its version, with
 * the message's own preheader in place of the version's when it gave one (`TemplateData.preheader`).
 * Its subject was rendered when it was written and is stored with it.
 */
export function storedSource(version: ResolvedVersion, data: TemplateData): RenderSource {
  if (!data.preheader) return version;
  const key = createHash('sha256').update(data.preheader).digest('base64url').slice(0, 22);
  return messageSource(
    { subject: null, html: null, preheader: data.preheader, template: version },
    `preheader:${key}`,
  );
}

/** The values the template's variables render with: those given, defaults for the rest. */
export function messageVariables(message: MessageInput): Record<string, unknown> {
  return message.template ? resolveVariables(message.template.variables, message.variables ?? {}) : {};
}

/** A trial render at save time, off the event loop: in the template pool, queued behind `owner`'s work. */
function trialRender(owner: string, source: RenderSource, given: Record<string, unknown>): Promise<Rendered> {
  return renderInPool(owner, { source, given, contact: SAMPLE_CONTACT });
}

/** The optimal string alignment distance, for "did you mean" (names are short). */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.length][b.length];
}

/** What a name that cannot be read was probably meant to be: a contact field or a declared variable. */
function meant(name: string, declared: string[]): string | null {
  const lower = name.toLowerCase();
  if (CONTACT_FIELDS.includes(lower)) return `contact.${lower}`;
  const near = (candidates: string[]) =>
    candidates
      .map((c) => ({ c, d: distance(lower, c.toLowerCase()) }))
      .filter(({ c, d }) => d <= Math.min(2, Math.floor(c.length / 3)))
      .sort((x, y) => x.d - y.d)[0]?.c;
  const variable = near(declared);
  if (variable) return variable;
  const field = near(CONTACT_FIELDS);
  return field ? `contact.${field}` : null;
}

/** Line and column (1-based) of the first place a Liquid tag or output of `source` reads `name`. */
function placeOf(source: string, name: string): string {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const reads = new RegExp(`(?<![\\w.-])${escaped}(?![\\w-])`);
  for (const tag of source.matchAll(/\{\{[\s\S]*?\}\}|\{%[\s\S]*?%\}/g)) {
    const at = reads.exec(tag[0]);
    if (!at) continue;
    const offset = (tag.index ?? 0) + at.index;
    const before = source.slice(0, offset);
    const line = before.split('\n').length;
    return ` line ${line}, column ${offset - before.lastIndexOf('\n')}`;
  }
  return '';
}

/** The typo guard: every name a field reads is `contact` or one of the template's variables. */
function checkNamesRead(field: string, source: string, names: string[], declared: string[]) {
  // `preferences_url`: the reader's preference page in marketing mail (templates/render.ts)
  const unknown = names.find((n) => n !== 'contact' && n !== 'preferences_url' && !declared.includes(n));
  if (unknown === undefined) return;
  const guess = meant(unknown, declared);
  const readable =
    declared.length > 0
      ? `\`contact\` (\`contact.first_name\`, \`contact.properties.<name>\`, ...) and the template's variables (${declared
          .slice(0, 20)
          .map((v) => `\`${v}\``)
          .join(', ')})`
      : '`contact` (`contact.email`, `contact.first_name`, `contact.last_name`, `contact.properties.<name>`)';
  const fix = guess
    ? `did you mean \`${guess}\`?`
    : declared.length > 0
      ? `use a contact field, or declare \`${unknown}\` in the template and give it in \`variables\``
      : 'use a contact field, or a template whose variables carry other values';
  throw new ValidationError(
    `\`${field}\`${placeOf(source, unknown)}: \`${unknown}\` is not known here; ${fix} A message reads ${readable}`,
  );
}

/** The template's declared variables that have neither a default nor a value among `given`: each is required. */
export function missingVariables(
  template: ResolvedVersion,
  given: Record<string, unknown> | null | undefined,
): ResolvedVersion['variables'] {
  return template.variables.filter((v) => v.default === undefined && !Object.hasOwn(given ?? {}, v.name));
}

/** The template's variables given a value or a default, and no value for a variable it lacks. */
function checkVariables(message: MessageInput, at: string): Record<string, unknown> {
  const given = message.variables ?? {};
  const field = `\`${at}variables\``;
  const { template } = message;
  if (template === null) {
    if (Object.keys(given).length > 0)
      throw new ValidationError(
        `${field} go with \`${at}template_id\`: inline content reads only \`contact\``,
      );
    return {};
  }
  const declared = template.variables;
  const stray = Object.keys(given).find((name) => !declared.some((v) => v.name === name));
  if (stray !== undefined)
    throw new ValidationError(
      `${field}: template ${template.templateId} version ${template.version} has no variable \`${stray.slice(0, 64)}\`; it declares ${
        declared.length === 0 ? 'none' : declared.map((v) => `\`${v.name}\``).join(', ')
      }`,
    );
  const [missing] = missingVariables(template, given);
  if (missing)
    throw new ValidationError(
      `${field}: template variable \`${missing.name}\` (a ${missing.type}) is required and has no default: give it in ${field}, e.g. {"${missing.name}": ...}, or give it a default in the template`,
    );
  try {
    return resolveVariables(declared, given);
  } catch (err) {
    if (err instanceof ValidationError) throw new ValidationError(`${field}: ${err.message}`);
    throw err;
  }
}

/** A render failure's reason after `what could not be rendered`, without the renderer's own opening. */
function whyNotRendered(err: unknown): string {
  if (!(err instanceof ValidationError)) throw err;
  const why = err.message.replace(/^The template(?:'s `\w+`)? could not be rendered:? ?/, '');
  return why.startsWith('within') ? ` ${why}` : `: ${why}`;
}

/** Where a message sits and whose it is: `at` prefixes its fields in errors, `owner` queues its work. */
export interface MessagePlace {
  /** Where the message sits in the request (`steps[2].`, `ab_test.variants[1].`, or '' at the top). */
  at: string;
  /** The project, whose template work the checks queue behind (render-pool.ts). */
  owner: string;
}

/**
 * Checks a campaign's or flow step's message when it is saved (and again before it is sent), as a
 * template is checked at save: each of its own fields parses as Liquid (no unknown tag or filter, no
 * file include), reads only `contact` and the template's variables (a typo is refused naming the
 * name and its line, with what was probably meant), the template's variables each get a value or a
 * default (and no value is given for a variable it lacks), and a trial render with sample values
 * stays within the render budget. Every 400 names the field under `place.at`.
 */
export async function checkMessageContent(message: MessageInput, { at, owner }: MessagePlace): Promise<void> {
  const declared = message.template?.variables.map((v) => v.name) ?? [];
  const fields: [string, string | null | undefined][] = [
    ['subject', message.subject],
    ['html', message.html],
    ['text', message.text],
    ['preheader', message.preheader],
  ];
  const own = fields.filter((f): f is [string, string] => typeof f[1] === 'string');
  const isHtml = (name: string) => name === 'html' || name === 'preheader';
  const names = await namesReadInPool(
    owner,
    own.map(([name, value]) => ({ field: `${at}${name}`, value, html: isHtml(name) })),
  );
  for (const [i, [name, value]] of own.entries()) checkNamesRead(`${at}${name}`, value, names[i], declared);
  const values = checkVariables(message, at);
  const variables = message.template?.variables ?? [];
  // the message's fields one at a time (so a failure names its field), then the template's parts
  // with the values given
  for (const [name, value] of own) {
    const source: RenderSource = {
      cacheKey: '',
      subject: isHtml(name) ? '' : value,
      compiled_html: isHtml(name) ? value : '',
      text_body: name === 'text' ? value : isHtml(name) ? null : '',
      variables,
    };
    await trialRender(owner, source, values).catch((err) => {
      throw new ValidationError(
        `\`${at}${name}\` could not be rendered with sample values${whyNotRendered(err)}`,
      );
    });
  }
  const { template } = message;
  if (template)
    await trialRender(owner, messageSource(message, ''), values).catch((err) => {
      throw new ValidationError(
        `\`${at}template_id\`: template ${template.templateId} could not be rendered with ${
          message.variables ? `\`${at}variables\`` : 'its defaults'
        }${whyNotRendered(err)}`,
      );
    });
}
