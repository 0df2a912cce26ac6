import { Liquid, Tag, type Template, Token, toValueSync } from 'liquidjs';
import { ValidationError } from '../core/errors.ts';

/**
 * Liquid for templates, bounded: own properties only (no `constructor`, no prototype), strict
 * filters (an unknown filter is a parse error), no file includes, and limits on what one template
 * may parse (characters), nest (blocks), render (milliseconds), allocate (characters of strings and
 * ranges) and output (characters, checked in render.ts).
 */
export const LIQUID_LIMITS = {
  parseChars: 500_000,
  // real templates nest a handful of blocks; thousands would exhaust the stack when rendered
  nestingDepth: 50,
  // wall-clock time, so generous: on a busy two-core machine a fair render can be descheduled for
  // tens of milliseconds (or meet a GC pause); the hostile cases are caught by the other limits first
  renderMs: 1_000,
  memoryChars: 5_000_000,
  // a loop over a large literal is cheap for liquidjs (a rope) but not for what reads the output
  outputChars: 5_000_000,
  // one job of the render pool (a request's messages, or a slice of a delivery batch): its CPU time,
  // past which the thread is stopped (the wall-clock limit above usually ends it first, cleanly)
  jobCpuMs: 1_500,
  // and the wall-clock time past which a job is stopped whatever its CPU time (a backstop)
  jobWallMs: 30_000,
  // and the output of all its messages together
  jobOutputChars: 20_000_000,
};

// liquidjs finds a token's line and column by counting newlines from the start of the source, and
// its variable analysis asks for every variable's position: quadratic in the template's size
// (`{{ x }}` × 40,000 took a minute). The same answer from an index of line starts, built once per
// source and searched, keeps the analysis linear.
let indexedInput: string | undefined;
let lineStarts: number[] = [];
Token.prototype.getPosition = function positionOf(this: Token): [number, number] {
  if (this.input !== indexedInput) {
    lineStarts = [0];
    for (let i = this.input.indexOf('\n'); i >= 0; i = this.input.indexOf('\n', i + 1))
      lineStarts.push(i + 1);
    indexedInput = this.input;
  }
  let low = 0;
  let high = lineStarts.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if (lineStarts[mid] <= this.begin) low = mid;
    else high = mid - 1;
  }
  return [low + 1, this.begin - lineStarts[low] + 1];
};

/**
 * The tokens of a source as liquidjs's parser consumes them (`shift()` and `length` only), taken from
 * the front in constant time: `Array.prototype.shift` copies a large array on every call, which made
 * parsing quadratic (`{{ x }}` × 40,000 took seconds).
 */
class TokenQueue<T> {
  private head = 0;
  private readonly items: T[];
  constructor(items: T[]) {
    this.items = items;
  }
  get length(): number {
    return this.items.length - this.head;
  }
  shift(): T | undefined {
    return this.head < this.items.length ? this.items[this.head++] : undefined;
  }
}

// liquidjs makes a new Parser for each parse: the queue goes in through their shared prototype (tags
// hand the rest of the tokens back to parseTokens, and the queue passes through unchanged)
const parserPrototype = Object.getPrototypeOf(new Liquid().parser) as Liquid['parser'];
const parseTokens = parserPrototype.parseTokens;
parserPrototype.parseTokens = function parseQueued(this: Liquid['parser'], tokens) {
  return parseTokens.call(
    this,
    Array.isArray(tokens) ? (new TokenQueue(tokens) as unknown as typeof tokens) : tokens,
  );
};

class NoIncludes extends Tag {
  constructor(token: ConstructorParameters<typeof Tag>[0], ...rest: unknown[]) {
    super(token, ...(rest as [never, never]));
    throw new Error(`tag "${token.name}" is not available: templates cannot include files`);
  }
  *render() {}
}

// Output is escaped once: text captured with `{% capture %}` was escaped when it was captured, and
// printing it again must not turn `O&#39;Neil &amp; Sons` into `O&amp;#39;Neil &amp;amp; Sons`
// (liquidjs's own escape_once: `&`, `<`, `>`, quotes escaped, its five entities left as they are)
type OutputFilter = (this: unknown, value: unknown) => string;
const builtin = new Liquid().filters as Record<string, OutputFilter>;
// without an `&` there is nothing to unescape first: one pass instead of two
function escapeOnce(this: unknown, value: unknown): string {
  return typeof value === 'string' && !value.includes('&')
    ? builtin.escape.call(this, value)
    : builtin.escape_once.call(this, value);
}

function engine(escapeHtml: boolean): Liquid {
  const liquid = new Liquid({
    strictFilters: true,
    ownPropertyOnly: true,
    outputEscape: escapeHtml ? escapeOnce : undefined,
    parseLimit: LIQUID_LIMITS.parseChars,
    renderLimit: LIQUID_LIMITS.renderMs,
    memoryLimit: LIQUID_LIMITS.memoryChars,
    relativeReference: false,
    dynamicPartials: false,
    cache: false,
    // dates render in UTC whatever the server's time zone (a date-only value stays that day)
    timezoneOffset: 0,
  });
  for (const name of ['include', 'render', 'layout', 'block']) liquid.registerTag(name, NoIncludes);
  return liquid;
}

/** HTML output: every `{{ }}` is HTML-escaped unless `| raw` says otherwise. */
export const htmlLiquid = engine(true);
/** Subject, preheader text and the text part: no escaping (they are not HTML). */
export const textLiquid = engine(false);

/** A Liquid error's message without liquidjs's own position suffix and code frame. */
function cleanMessage(err: Error): string {
  return err.message.split('\n')[0].replace(/, line:\d+, col:\d+$/, '');
}

type Positioned = { getPosition?: () => number[] };

/** The first block nested deeper than the limit, found without recursion (the tree may be deep). */
function tooDeep(templates: Template[]): Template | undefined {
  const stack = templates.map((template) => ({ template, depth: 1 }));
  for (let next = stack.pop(); next; next = stack.pop()) {
    const { template, depth } = next;
    if (!template.children) continue;
    if (depth > LIQUID_LIMITS.nestingDepth) return template;
    for (const child of toValueSync(template.children(false, true)))
      stack.push({ template: child, depth: depth + 1 });
  }
  return undefined;
}

/**
 * Parses a field's Liquid; a syntax error, an unknown tag or filter, or blocks nested too deep is a
 * 400 naming line and column.
 */
export function parseLiquid(liquid: Liquid, source: string, field: string): Template[] {
  const at = (token: Positioned | undefined) => {
    const [line, col] = token?.getPosition?.() ?? [1, 1];
    return `\`${field}\` line ${line}, column ${col}`;
  };
  let templates: Template[];
  try {
    templates = liquid.parse(source);
  } catch (err) {
    throw new ValidationError(`${at((err as { token?: Positioned }).token)}: ${cleanMessage(err as Error)}`);
  }
  const deep = tooDeep(templates);
  if (deep)
    throw new ValidationError(
      `${at(deep.token)}: blocks may nest at most ${LIQUID_LIMITS.nestingDepth} deep`,
    );
  return templates;
}

/** The top-level names a parsed template reads (`{{ name }}`, `{{ contact.first_name }}` → contact). */
export function namesRead(liquid: Liquid, templates: Template[]): string[] {
  return liquid.globalVariablesSync(templates);
}
