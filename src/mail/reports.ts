import type { Attachment, ParsedMail, SimpleParserOptions } from 'mailparser';
import { parseMail } from './parsed.ts';

export interface BounceRecipient {
  /** Final-Recipient (or Original-Recipient), lower-cased, without the `rfc822;` type. */
  recipient: string;
  /** failed | delayed | delivered | relayed | expanded */
  action: string;
  /** Enhanced status code, e.g. 5.1.1 */
  status: string;
  /** hard: failed with 5.x.x; soft: 4.x.x or delayed */
  bounceType: 'hard' | 'soft';
  /** Diagnostic-Code without its `smtp;` type, unfolded. */
  diagnostic: string | null;
  /** Remote-MTA without its `dns;` type (and without a trailing comment). */
  remoteMta: string | null;
}

export interface OriginalMessage {
  /** With angle brackets, e.g. `<uuid@example.com>`. */
  messageId: string | null;
  /** The address without `<>`; null for the null sender `<>`. */
  returnPath: string | null;
  to: string | null;
  /** Lower-cased header name → first value, unfolded (encoded words are left as they are). */
  headers: Record<string, string>;
}

export type MailReport =
  | {
      kind: 'bounce';
      recipients: BounceRecipient[];
      original: OriginalMessage | null;
      reportingMta: string | null;
    }
  | {
      kind: 'complaint';
      feedbackType: string;
      recipient: string | null;
      userAgent: string | null;
      sourceIp: string | null;
      arrivalDate: string | null;
      original: OriginalMessage | null;
    };

/**
 * By default mailparser folds message/delivery-status into `text` and parses an inline message/rfc822
 * into `text` as well (keeping only From, To, Subject and Date of it); these options keep both, like
 * every other part of a report, as attachments with their raw content.
 */
const PARSER_OPTIONS: SimpleParserOptions = {
  keepDeliveryStatus: true,
  ignoreEmbedded: true,
  skipHtmlToText: true,
  skipTextToHtml: true,
  skipTextLinks: true,
  skipImageLinks: true,
};

const DELIVERY_STATUS = ['message/delivery-status', 'message/global-delivery-status'];
const FEEDBACK_REPORT = ['message/feedback-report'];
const RETURNED_MESSAGE = [
  'message/rfc822',
  'text/rfc822-headers',
  'message/global',
  'message/global-headers',
];

type Fields = Map<string, string>;

/** "Name: value" lines (RFC 5322 header syntax), continuation lines unfolded; the first value of a name wins. */
function parseFields(block: string): Fields {
  const fields: Fields = new Map();
  for (const line of block.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    if (colon <= 0 || !/^[!-9;-~]+$/.test(name)) continue;
    if (!fields.has(name)) fields.set(name, line.slice(colon + 1).trim());
  }
  return fields;
}

/** Field blocks separated by blank lines (a delivery-status body: per-message, then per-recipient). */
function fieldBlocks(text: string): Fields[] {
  return text
    .split(/\r?\n[ \t]*(?=\r?\n)/)
    .map((block) => parseFields(block.trim()))
    .filter((fields) => fields.size > 0);
}

/** Drops an RFC 3464 type (`rfc822;`, `dns;`, `smtp;`, `X-Postfix;`). */
function untyped(value: string | undefined): string | null {
  const stripped = value?.replace(/^[\w.-]+\s*;\s*/, '').trim();
  return stripped ? stripped : null;
}

/** The address in `Name <a@b>`, `<a@b>` or `a@b`, lower-cased; null when there is none. */
function bareAddress(value: string | null | undefined): string | null {
  if (!value) return null;
  const address = (/<([^<>]*)>/.exec(value)?.[1] ?? value).trim().toLowerCase();
  return /^[^\s@]+@[^\s@]+$/.test(address) ? address : null;
}

/** Feedback loops that hide the complainer write a placeholder (redacted@…, xxxx, ****) instead. */
function unredacted(address: string | null): string | null {
  const local = address?.split('@')[0] ?? '';
  return address && !/^(redacted|x+|\*+|-+)$/i.test(local) ? address : null;
}

const enhanced = (m: RegExpExecArray) => `${m[1]}.${m[2]}.${m[3]}`;

/** The Status field; else the enhanced code in the diagnostic; else its basic reply code (5xx → 5.0.0). */
function statusOf(field: string | undefined, diagnostic: string | null): string | null {
  const code = /^\s*([245])\.(\d{1,3})\.(\d{1,3})/.exec(field ?? '');
  if (code) return enhanced(code);
  if (!diagnostic) return null;
  const afterReply = /^\s*[245]\d\d[ -]+([245])\.(\d{1,3})\.(\d{1,3})\b/.exec(diagnostic);
  if (afterReply) return enhanced(afterReply);
  const anywhere = /(?<![\d.])([245])\.(\d{1,3})\.(\d{1,3})(?!\.?\d)/.exec(diagnostic);
  if (anywhere) return enhanced(anywhere);
  const basic = /^\s*([245])\d\d(?!\d)/.exec(diagnostic);
  return basic ? `${basic[1]}.0.0` : null;
}

function parseRecipient(fields: Fields): BounceRecipient | null {
  const recipient =
    bareAddress(untyped(fields.get('final-recipient'))) ??
    bareAddress(untyped(fields.get('original-recipient')));
  if (!recipient) return null;
  const diagnostic = untyped(fields.get('diagnostic-code'));
  let action = (fields.get('action') ?? '').split(/[\s(]/)[0].toLowerCase();
  // a recipient without any code: the action still says whether it failed for good or is retried
  const status =
    statusOf(fields.get('status'), diagnostic) ??
    (action === 'failed' ? '5.0.0' : action === 'delayed' ? '4.0.0' : action ? '2.0.0' : null);
  if (!status) return null;
  if (!action) action = status.startsWith('5') ? 'failed' : status.startsWith('4') ? 'delayed' : 'delivered';
  const remoteMta = untyped(fields.get('remote-mta'))
    ?.replace(/\s*\(.*$/, '')
    .replace(/\.$/, '');
  return {
    recipient,
    action,
    status,
    bounceType: status.startsWith('5') && action === 'failed' ? 'hard' : 'soft',
    diagnostic,
    remoteMta: remoteMta || null,
  };
}

function messageIdOf(value: string | undefined): string | null {
  const id = value?.trim();
  if (!id) return null;
  return /<[^<>]+>/.exec(id)?.[0] ?? `<${id.split(/\s/)[0]}>`;
}

/** The header block of a returned message or text/rfc822-headers part; the body is not needed. */
function parseOriginal(text: string): OriginalMessage {
  const headers = text.replace(/^(?:[ \t]*\r?\n)+/, '');
  const end = headers.search(/\r?\n[ \t]*\r?\n/);
  const fields = parseFields(end < 0 ? headers : headers.slice(0, end));
  const returnPath = fields.get('return-path');
  return {
    messageId: messageIdOf(fields.get('message-id')),
    returnPath: (returnPath && (/<([^<>]*)>/.exec(returnPath)?.[1] ?? returnPath).trim()) || null,
    to: fields.get('to') || null,
    headers: Object.fromEntries(fields),
  };
}

function rootContentType(mail: ParsedMail): string {
  const header = mail.headers.get('content-type');
  const value = header && typeof header === 'object' && 'value' in header ? header.value : header;
  return typeof value === 'string' ? value.trim().toLowerCase() : '';
}

/**
 * Recognises a delivery status notification (RFC 3464, and RFC 6533's global form) or a feedback
 * report (ARF, RFC 5965) in a raw message; returns null for anything else. Never throws: a broken
 * report yields null or whatever could be read of it.
 */
export async function parseMailReport(raw: Buffer | string): Promise<MailReport | null> {
  try {
    return readReport(await parseMail(raw, PARSER_OPTIONS));
  } catch {
    return null;
  }
}

function readReport(mail: ParsedMail): MailReport | null {
  const isReport = rootContentType(mail) === 'multipart/report';
  const part = (types: string[], reportPart: boolean): Attachment | undefined =>
    mail.attachments.find(
      (a) =>
        types.includes(a.contentType.toLowerCase()) &&
        // outside a multipart/report, a report part must not be a mere file attachment
        (!reportPart || isReport || a.contentDisposition !== 'attachment'),
    );
  const text = (a: Attachment) => a.content.toString('utf8');
  const returned = part(RETURNED_MESSAGE, false);
  const original = returned ? parseOriginal(text(returned)) : null;

  const feedback = part(FEEDBACK_REPORT, true);
  if (feedback) {
    const fields = parseFields(text(feedback));
    return {
      kind: 'complaint',
      feedbackType: (fields.get('feedback-type') || 'abuse').toLowerCase(),
      // Original-Rcpt-To; else Hotmail's record of the envelope recipient; else the returned To
      recipient:
        unredacted(bareAddress(fields.get('original-rcpt-to'))) ??
        unredacted(bareAddress(original?.headers['x-hmxmroriginalrecipient'])) ??
        unredacted(bareAddress(original?.to)),
      userAgent: fields.get('user-agent') || null,
      sourceIp: fields.get('source-ip') || null,
      // Yahoo writes Received-Date, an ARF draft's name for it
      arrivalDate: fields.get('arrival-date') || fields.get('received-date') || null,
      original,
    };
  }

  const status = part(DELIVERY_STATUS, true);
  if (!status) return null;
  const blocks = fieldBlocks(text(status));
  const isRecipient = (f: Fields) => f.has('final-recipient') || f.has('original-recipient');
  const perMessage = blocks.find((f) => !isRecipient(f));
  const recipients = blocks.filter(isRecipient).flatMap((f) => parseRecipient(f) ?? []);
  // Gmail names the returned message in the per-message block, which helps when it is not attached
  const originalId = messageIdOf(perMessage?.get('x-original-message-id'));
  return {
    kind: 'bounce',
    recipients,
    original:
      original?.messageId || !originalId
        ? original
        : { returnPath: null, to: null, headers: {}, ...original, messageId: originalId },
    reportingMta: untyped(perMessage?.get('reporting-mta')),
  };
}
