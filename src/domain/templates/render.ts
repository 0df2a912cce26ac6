import type { Template } from 'liquidjs';
import type { TemplateVariable } from '../../db/schema.ts';
import { htmlToText, PREHEADER_END, PREHEADER_START } from '../../mail/html-to-text.ts';
import { PREFERENCES_URL_STANDIN } from '../../mail/marketing.ts';
import { parseIsoDate } from '../core/dates.ts';
import { ValidationError } from '../core/errors.ts';
import { htmlLiquid, LIQUID_LIMITS, parseLiquid, textLiquid } from './liquid.ts';

/** What rendering needs of a draft or a published version. */
export interface RenderSource {
  /** Identifies the parsed Liquid in the cache: a version never changes; a draft key includes its edit time. */
  cacheKey: string;
  subject: string;
  compiled_html: string;
  text_body: string | null;
  variables: TemplateVariable[];
}

/** The contact a message goes to, as templates see it (`contact.first_name`, `contact.properties.*`). */
export interface TemplateContact {
  email: string;
  first_name: string | null;
  last_name: string | null;
  properties: Record<string, unknown>;
}

export interface Rendered {
  subject: string;
  html: string;
  text: string;
}

interface Parsed {
  subject: Template[];
  html: Template[];
  text: Template[] | null;
}

/** Sources a render thread keeps by cache key (render-pool.ts sends each once, then its key alone). */
export const SOURCES_KEPT = 500;

// parsed Liquid per draft edit or version: immutable, so nothing to keep coherent across nodes
const CACHE_SIZE = 500;
const parsedCache = new Map<string, Parsed>();

function parsedOf(source: RenderSource): Parsed {
  // an empty key is a trial render at save time: parsed, never kept
  const hit = source.cacheKey ? parsedCache.get(source.cacheKey) : undefined;
  if (hit) return hit;
  const parsed = {
    subject: parseLiquid(textLiquid, source.subject, 'subject'),
    html: parseLiquid(htmlLiquid, source.compiled_html, 'html'),
    text: source.text_body === null ? null : parseLiquid(textLiquid, source.text_body, 'text'),
  };
  if (!source.cacheKey) return parsed;
  if (parsedCache.size >= CACHE_SIZE) parsedCache.delete(parsedCache.keys().next().value as string);
  parsedCache.set(source.cacheKey, parsed);
  return parsed;
}

const SAMPLE: Record<TemplateVariable['type'], string | number | boolean> = {
  string: 'sample',
  number: 1,
  boolean: true,
  date: '2026-01-01T09:00:00Z',
};

/** Values for a trial render at save time: each variable's default, or a sample of its type. */
export function sampleVariables(variables: TemplateVariable[]): Record<string, unknown> {
  return Object.fromEntries(variables.map((v) => [v.name, v.default ?? SAMPLE[v.type]]));
}

function typeMatches(type: TemplateVariable['type'], value: unknown): boolean {
  if (type === 'number') return typeof value === 'number' && Number.isFinite(value);
  if (type === 'boolean') return typeof value === 'boolean';
  if (type === 'date') return parseIsoDate(value) !== null;
  return typeof value === 'string';
}

/** The request's variables checked against the declared ones (type, required), defaults filled in. */
export function resolveVariables(
  declared: TemplateVariable[],
  given: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const v of declared) {
    const value = given && Object.hasOwn(given, v.name) ? given[v.name] : v.default;
    if (value === undefined)
      throw new ValidationError(
        `Template variable \`${v.name}\` is required (a ${v.type}) and was not given`,
      );
    if (!typeMatches(v.type, value))
      throw new ValidationError(
        `Template variable \`${v.name}\` must be a ${v.type}${v.type === 'date' ? ' (ISO 8601)' : ''}`,
      );
    values[v.name] = value;
  }
  return values;
}

/**
 * The time the renders of one request may take together (subject, HTML and text of every message):
 * a batch or the three parts of a message cannot multiply the limit.
 */
export interface RenderBudget {
  deadline: number;
}

/** A new budget of LIQUID_LIMITS.renderMs (or `ms`), for one request's renders. */
export function renderBudget(ms = LIQUID_LIMITS.renderMs): RenderBudget {
  return { deadline: performance.now() + ms };
}

function renderOne(
  liquid: typeof htmlLiquid,
  templates: Template[],
  scope: object,
  field: string,
  budget: RenderBudget,
): string {
  let output: string;
  try {
    const renderLimit = Math.max(1, budget.deadline - performance.now());
    output = liquid.renderSync(templates, scope, { renderLimit }) as string;
  } catch (err) {
    throw new ValidationError(
      `The template's \`${field}\` could not be rendered: ${(err as Error).message.split('\n')[0]}`,
    );
  }
  // checked before anything reads the output (its length is known without flattening it)
  if (output.length > LIQUID_LIMITS.outputChars)
    throw new ValidationError(
      `The template's \`${field}\` could not be rendered: its output would be over ${LIQUID_LIMITS.outputChars} characters`,
    );
  return output;
}

export { PREHEADER_END, PREHEADER_START } from '../../mail/html-to-text.ts';

function withoutPreheader(html: string): string {
  const start = html.indexOf(PREHEADER_START);
  const end = html.indexOf(PREHEADER_END, start);
  return start < 0 || end < 0 ? html : html.slice(0, start) + html.slice(end + PREHEADER_END.length);
}

/**
 * The one render function: a draft or version, the request's variables and the contact → subject,
 * HTML and text. MJML was compiled when the draft was saved or the version published; this only
 * renders Liquid (parsed once per draft edit or version), HTML-escaped in the HTML part, within
 * `budget` (shared by all the renders of a request; a budget of its own when none is given).
 */
export function renderTemplate(
  source: RenderSource,
  given: Record<string, unknown> | undefined,
  contact: TemplateContact | null,
  budget: RenderBudget = renderBudget(),
  opts: { deriveText?: boolean } = {},
): Rendered {
  const parsed = parsedOf(source);
  // `preferences_url`: a stand-in the marketing layer fills with the reader's preference page (a
  // template's own variable of that name wins)
  const values = {
    preferences_url: PREFERENCES_URL_STANDIN,
    ...resolveVariables(source.variables, given),
    contact: contact ?? {},
  };
  // each part in a scope of its own: `{% increment %}` counters and `{% assign %}` start afresh
  const subject = renderOne(textLiquid, parsed.subject, { ...values }, 'subject', budget)
    .replace(/\s*[\r\n]+\s*/g, ' ')
    .trim();
  const html = renderOne(htmlLiquid, parsed.html, { ...values }, 'html', budget);
  // deriving the text part is half the cost of a render: skipped when only checking (at acceptance,
  // where the text is not kept)
  const text = parsed.text
    ? renderOne(textLiquid, parsed.text, { ...values }, 'text', budget)
    : opts.deriveText === false
      ? ''
      : htmlToText(withoutPreheader(html));
  return { subject, html, text };
}
