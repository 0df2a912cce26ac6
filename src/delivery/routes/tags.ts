import type { Stream, TagDialect } from './config.ts';

/**
 * Provider message tags (the spec's §6): what each message tells the provider it leaves through,
 * so the provider's own reports and events can be grouped by project, stream and the campaign, flow,
 * step or A/B variation responsible, and matched back to the email. Pure: the headers of a relay's
 * dialect, or the EmailTags of Amazon SES's API, from the message's tags.
 */
export interface ProviderTags {
  /** The email's id (matches a provider's event back to the email). */
  email: string;
  /** Null for the service's own mail (codes, notices). */
  project: string | null;
  stream: Stream;
  campaign?: string | null;
  /** The A/B variation's name. */
  variation?: string | null;
  flow?: string | null;
  step?: string | null;
}

/** The tag names in the order they are written; the `posthorn_` prefix keeps them apart from a user's. */
const NAMES = ['email', 'project', 'stream', 'campaign', 'variation', 'flow', 'step'] as const;
const PREFIX = 'posthorn_';

/**
 * What every provider accepts in a tag's name and value: ASCII letters, digits, `_` and `-` (SES's
 * rule, the narrowest), at most 256 characters; anything else becomes `_`. Ids are uuids and
 * streams plain words, so only a variation's name is ever changed.
 */
export function tagValue(value: string, max = 256): string {
  return value.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, max);
}

/** The message's tags as (name, value) pairs, in a fixed order, leaving out those that do not apply. */
export function tagPairs(tags: ProviderTags): [string, string][] {
  const pairs: [string, string][] = [];
  for (const name of NAMES) {
    const value = tags[name];
    if (value !== null && value !== undefined && value !== '')
      pairs.push([`${PREFIX}${name}`, tagValue(value)]);
  }
  return pairs;
}

/** The one tag a provider that takes a single category gets: the campaign or flow, else the stream. */
function category(tags: ProviderTags): string {
  if (tags.campaign) return tagValue(`campaign-${tags.campaign}`, 128);
  if (tags.flow) return tagValue(`flow-${tags.flow}`, 128);
  return tags.stream;
}

/** JSON that stays on one header line: no character outside printable ASCII. */
function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[^\x20-\x7e]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/**
 * The header lines (each ending in CRLF) that carry the tags to a relay speaking `dialect`, put in
 * front of the signed message (they are not signed, and the provider removes them):
 * - `ses`: `X-SES-MESSAGE-TAGS: name=value, …` and, when the route names one, `X-SES-CONFIGURATION-SET`;
 * - `mailgun`: `X-Mailgun-Tag` (at most 3: the stream, then the campaign or flow) and every pair in
 *   `X-Mailgun-Variables` (a JSON object);
 * - `postmark`: `X-PM-Tag` (one: the campaign or flow, else the stream) and `X-PM-Metadata-<name>`
 *   per pair (Postmark's keys are at most 20 characters: the names without the prefix);
 * - `sendgrid`: `X-SMTPAPI` with the stream (and campaign or flow) as categories and the pairs as
 *   unique_args;
 * - `none`: nothing.
 */
export function tagHeaders(
  dialect: TagDialect,
  tags: ProviderTags,
  opts: { configurationSet?: string } = {},
): string {
  const pairs = tagPairs(tags);
  const lines: string[] = [];
  switch (dialect) {
    case 'ses':
      lines.push(`X-SES-MESSAGE-TAGS: ${pairs.map(([n, v]) => `${n}=${v}`).join(', ')}`);
      if (opts.configurationSet) lines.push(`X-SES-CONFIGURATION-SET: ${tagValue(opts.configurationSet)}`);
      break;
    case 'mailgun': {
      for (const mark of [tags.stream, ...(tags.campaign || tags.flow ? [category(tags)] : [])])
        lines.push(`X-Mailgun-Tag: ${mark}`);
      lines.push(`X-Mailgun-Variables: ${asciiJson(Object.fromEntries(pairs))}`);
      break;
    }
    case 'postmark':
      lines.push(`X-PM-Tag: ${category(tags)}`);
      for (const [name, value] of pairs)
        lines.push(`X-PM-Metadata-${name.slice(PREFIX.length)}: ${value.slice(0, 80)}`);
      break;
    case 'sendgrid': {
      const categories = [tags.stream, ...(tags.campaign || tags.flow ? [category(tags)] : [])];
      lines.push(`X-SMTPAPI: ${asciiJson({ category: categories, unique_args: Object.fromEntries(pairs) })}`);
      break;
    }
    case 'none':
      break;
  }
  return lines.map((line) => `${line}\r\n`).join('');
}

/** The tags as Amazon SES's v2 API takes them (`EmailTags` of SendEmail). */
export function sesEmailTags(tags: ProviderTags): { Name: string; Value: string }[] {
  return tagPairs(tags).map(([Name, Value]) => ({ Name, Value }));
}
