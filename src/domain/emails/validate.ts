import type { Mailbox } from '../../mail/address.ts';
import { parseMailbox } from '../core/addresses.ts';
import { parseIsoDate } from '../core/dates.ts';
import { ValidationError } from '../core/errors.ts';
import { parseNaturalTime } from '../core/natural-time.ts';

export const MAX_RECIPIENTS = 50;
export const MAX_MESSAGE_BYTES = 40 * 1024 * 1024;
export const MAX_SCHEDULE_DAYS = 30;

export const KNOWN_FIELDS = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'reply_to',
  'subject',
  'html',
  'text',
  'headers',
  'attachments',
  'tags',
  'scheduled_at',
  'template',
]);

// headers Posthorn sets itself, or that would change routing or authentication
export const PROTECTED_HEADERS = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'reply-to',
  'subject',
  'sender',
  'date',
  'message-id',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
  'content-disposition',
  'dkim-signature',
  'arc-seal',
  'arc-message-signature',
  'arc-authentication-results',
  'authentication-results',
  'received',
  'return-path',
  'feedback-id',
  // where the message was delivered: written by the receiving side, never by the sender
  'delivered-to',
  'envelope-to',
  'x-envelope-to',
  'x-original-to',
  // where bounces and receipts go: Posthorn handles bounces itself
  'errors-to',
  'disposition-notification-to',
  'return-receipt-to',
  // set by campaigns and flows (RFC 8058 one-click unsubscribe)
  'list-unsubscribe',
  'list-unsubscribe-post',
]);
// whole families: Posthorn's own headers, and resending (RFC 5322 3.6.6) which rewrites routing
const PROTECTED_HEADER_PREFIXES = ['x-posthorn-', 'resent-'];

/** Whether a header (any case) is one a sender may not set: the one rule for API and SMTP input. */
export function isProtectedHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return PROTECTED_HEADERS.has(lower) || PROTECTED_HEADER_PREFIXES.some((p) => lower.startsWith(p));
}

const HEADER_NAME = /^[!-9;-~]+$/;
const TAG_TEXT = /^[A-Za-z0-9_-]{1,256}$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export interface EmailInput {
  /** Optional when a template gives a default `from`. */
  from?: string;
  to: string | string[];
  cc?: string | string[];
  bcc?: string | string[];
  reply_to?: string | string[];
  /** Absent when the message comes from `template`. */
  subject?: string;
  html?: string;
  text?: string;
  headers?: Record<string, string>;
  /** `content` (base64), or `path`: a URL fetched before the checks (attachment-url.ts). */
  attachments?: {
    filename?: string;
    content?: string;
    path?: string;
    content_type?: string;
    content_id?: string;
  }[];
  tags?: { name: string; value: string }[];
  scheduled_at?: string;
  /** A published template in place of subject/html/text (rendered before these checks). */
  template?: { id: string; version?: number; variables?: Record<string, unknown> };
}

export interface ValidAttachment {
  filename: string | null;
  contentType: string | null;
  contentId: string | null;
  content: Buffer;
}

/** A message that passed every rule, ready to store. */
export interface ValidEmail {
  from: Mailbox;
  to: Mailbox[];
  cc: Mailbox[];
  bcc: Mailbox[];
  replyTo: Mailbox[];
  subject: string;
  html: string | null;
  text: string | null;
  headers: Record<string, string>;
  attachments: ValidAttachment[];
  tags: { name: string; value: string }[];
  scheduledAt: Date | null;
  sizeEstimate: number;
  warnings: string[];
}

function list(value: string | string[] | undefined, field: string): Mailbox[] {
  if (value === undefined) return [];
  const items = Array.isArray(value) ? value : [value];
  return items.map((item, i) => parseMailbox(item, Array.isArray(value) ? `${field}[${i}]` : field));
}

/** Checks one message against every rule; the message names the field and the rule broken. */
export function validateEmail(input: EmailInput, now = new Date()): ValidEmail {
  if (input.from === undefined)
    throw new ValidationError('Field `from` is required (or a template with a default `from`)');
  if (input.subject === undefined)
    throw new ValidationError('Field `subject` is required (or give `template`)');
  const from = parseMailbox(input.from, 'from');
  const to = list(input.to, 'to');
  const cc = list(input.cc, 'cc');
  const bcc = list(input.bcc, 'bcc');
  const replyTo = list(input.reply_to, 'reply_to');
  if (to.length === 0) throw new ValidationError('`to` needs at least one recipient');
  const recipients = to.length + cc.length + bcc.length;
  if (recipients > MAX_RECIPIENTS) {
    throw new ValidationError(
      `A message may have at most ${MAX_RECIPIENTS} recipients over to, cc and bcc; this one has ${recipients}`,
    );
  }
  const subject = input.subject;
  if (/[\r\n]/.test(subject)) throw new ValidationError('`subject` must not contain line breaks');
  if (subject.trim() === '') throw new ValidationError('`subject` must not be empty');
  if (subject.length > 998) throw new ValidationError('`subject` must be at most 998 characters');
  if (!input.html && !input.text)
    throw new ValidationError('Give the message a body: `html`, `text` or both');

  const headers = checkHeaders(input.headers);

  let size = (input.html?.length ?? 0) + (input.text?.length ?? 0) * 2 + 2_000;
  const attachments = (input.attachments ?? []).map(checkAttachment);
  size += attachments.reduce((sum, a) => sum + Math.ceil(a.content.length / 3) * 4 + 500, 0);
  if (size > MAX_MESSAGE_BYTES) {
    throw new ValidationError(
      `The message is about ${Math.round(size / 1048576)} MB once encoded; the limit is 40 MB`,
    );
  }

  const tags = checkTags(input.tags);

  const scheduledAt = checkScheduledAt(input.scheduled_at, now);

  const warnings = Object.keys(input).filter((k) => !KNOWN_FIELDS.has(k));
  return {
    from,
    to,
    cc,
    bcc,
    replyTo,
    subject,
    html: input.html ?? null,
    text: input.text ?? null,
    headers,
    attachments,
    tags,
    scheduledAt,
    sizeEstimate: size,
    warnings,
  };
}

/** Tags of a message or campaign: names and values of letters, digits, _ and - (1 to 256 characters). */
export function checkTags(
  given: { name: string; value: string }[] | undefined,
): { name: string; value: string }[] {
  return (given ?? []).map((t, i) => {
    if (!TAG_TEXT.test(t.name) || !TAG_TEXT.test(t.value)) {
      throw new ValidationError(
        `\`tags[${i}]\`: name and value may contain only letters, digits, _ and - (1 to 256 characters)`,
      );
    }
    return { name: t.name, value: t.value };
  });
}

/** Custom headers: valid names, none reserved, single-line string values. */
function checkHeaders(given: Record<string, string> | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(given ?? {})) {
    if (!HEADER_NAME.test(name))
      throw new ValidationError(`\`headers\`: "${name.slice(0, 50)}" is not a valid header name`);
    if (isProtectedHeader(name)) {
      throw new ValidationError(
        `\`headers\`: ${name} is reserved: it is set by Posthorn or by the receiving servers and cannot be given (use the matching field if there is one)`,
      );
    }
    if (typeof value !== 'string') throw new ValidationError(`\`headers.${name}\` must be a string`);
    if (/[\r\n]/.test(value)) throw new ValidationError(`\`headers.${name}\` must not contain line breaks`);
    if (value.length > 998) throw new ValidationError(`\`headers.${name}\` must be at most 998 characters`);
    headers[name] = value;
  }
  return headers;
}

/** One attachment: base64 content, a filename or a content id, a MIME type when given. */
function checkAttachment(a: NonNullable<EmailInput['attachments']>[number], i: number): ValidAttachment {
  const field = `attachments[${i}]`;
  if (typeof a.content !== 'string')
    throw new ValidationError(`\`${field}\` needs \`content\` (base64) or \`path\` (a URL to fetch it from)`);
  const content = a.content.replace(/\s+/g, '');
  if (!BASE64.test(content) || content.length % 4 !== 0) {
    throw new ValidationError(`\`${field}.content\` must be base64-encoded`);
  }
  if (a.filename !== undefined && a.filename.length > 255)
    throw new ValidationError(`\`${field}.filename\` must be at most 255 characters`);
  if (a.content_type !== undefined && !/^[\w.+-]+\/[\w.+-]+$/.test(a.content_type)) {
    throw new ValidationError(`\`${field}.content_type\` must be a MIME type like application/pdf`);
  }
  if (a.content_id !== undefined && !/^[\w.@+-]{1,200}$/.test(a.content_id)) {
    throw new ValidationError(`\`${field}.content_id\` may contain letters, digits and . @ + - _ only`);
  }
  if (a.filename === undefined && a.content_id === undefined) {
    throw new ValidationError(`\`${field}\` needs a \`filename\` (or a \`content_id\` for an inline image)`);
  }
  return {
    // line breaks in a filename are folded into spaces: they can never start a new header
    filename: a.filename === undefined ? null : a.filename.replace(/[\r\n]+/g, ' '),
    contentType: a.content_type ?? null,
    contentId: a.content_id ?? null,
    content: Buffer.from(content, 'base64'),
  };
}

/**
 * When to send: null for now (a time in the past or now means "send now"), at most 30 days ahead;
 * ISO 8601, or as a person says it ("in 1 hour", "tomorrow at 9am": core/natural-time.ts).
 */
export function checkScheduledAt(value: string | undefined, now: Date): Date | null {
  if (value === undefined) return null;
  const parsed = parseIsoDate(value, { timeRequired: true }) ?? parseNaturalTime(String(value), now);
  if (!parsed) {
    throw new ValidationError(
      '`scheduled_at` must be an ISO 8601 date-time such as 2026-12-01T09:00:00Z, or a time such as "in 1 hour", "in 30 minutes" or "tomorrow at 9am" (UTC)',
    );
  }
  if (parsed.getTime() > now.getTime() + MAX_SCHEDULE_DAYS * 86_400_000) {
    throw new ValidationError(`\`scheduled_at\` may be at most ${MAX_SCHEDULE_DAYS} days ahead`);
  }
  return parsed.getTime() > now.getTime() ? parsed : null;
}
