import type { AddressObject, ParsedMail } from 'mailparser';
import { formatMailbox } from '../../mail/address.ts';
import { ValidationError } from '../core/errors.ts';
import { type EmailInput, isProtectedHeader } from './validate.ts';

function mailboxes(field: AddressObject | AddressObject[] | undefined): { name: string; address: string }[] {
  const objects = field === undefined ? [] : Array.isArray(field) ? field : [field];
  const out: { name: string; address: string }[] = [];
  const visit = (entries: AddressObject['value']) => {
    for (const e of entries) {
      if (e.group) visit(e.group);
      else if (e.address) out.push({ name: e.name ?? '', address: e.address });
    }
  };
  for (const o of objects) visit(o.value);
  return out;
}

/**
 * A message submitted over SMTP as the input of the one send path (`acceptEmails`). The envelope
 * decides who receives it: recipients named in To or Cc keep their header (and display name), the
 * other envelope recipients are Bcc. Custom headers pass on; the headers no sender may set (the
 * one rule of `isProtectedHeader`: Message-ID, Date, DKIM-Signature, Received, Delivered-To, ...)
 * are dropped, and Posthorn writes its own where it has one.
 */
export function emailInputFromMime(parsed: ParsedMail, envelopeRecipients: string[]): EmailInput {
  const from = mailboxes(parsed.from);
  if (from.length !== 1) {
    throw new ValidationError(
      from.length === 0
        ? 'The message has no From header: add one with an address on a verified domain'
        : 'The message has several From addresses: give exactly one',
    );
  }
  const remaining = new Map(envelopeRecipients.map((r) => [r.toLowerCase(), r]));
  const take = (list: { name: string; address: string }[]) =>
    list.flatMap((m) => {
      const key = m.address.toLowerCase();
      if (!remaining.has(key)) return [];
      remaining.delete(key);
      return [formatMailbox(m)];
    });
  const to = take(mailboxes(parsed.to));
  const cc = take(mailboxes(parsed.cc));
  const bcc = [...remaining.values()];
  if (to.length === 0) {
    throw new ValidationError(
      'None of the envelope recipients (RCPT TO) is named in the To header: put at least one of them in To',
    );
  }

  const headers: Record<string, string> = {};
  for (const { key, line } of parsed.headerLines) {
    if (isProtectedHeader(key)) continue;
    if (key.startsWith('content-')) continue;
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim();
    const value = line
      .slice(colon + 1)
      .replace(/\r?\n[ \t]+/g, ' ')
      .trim();
    if (name && !Object.keys(headers).some((h) => h.toLowerCase() === key)) headers[name] = value;
  }

  const html = typeof parsed.html === 'string' && parsed.html !== '' ? parsed.html : undefined;
  const text = parsed.text !== undefined && parsed.text !== '' ? parsed.text : undefined;
  return {
    from: formatMailbox(from[0]),
    to,
    ...(cc.length > 0 ? { cc } : {}),
    ...(bcc.length > 0 ? { bcc } : {}),
    ...(parsed.replyTo ? { reply_to: mailboxes(parsed.replyTo).map(formatMailbox) } : {}),
    subject: parsed.subject ?? '',
    // a message with no body at all is sent with an empty text part
    ...(html === undefined && text === undefined ? { text: '\n' } : {}),
    ...(html !== undefined ? { html } : {}),
    ...(text !== undefined ? { text } : {}),
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    attachments: parsed.attachments.map((a, i) => {
      const contentId = a.cid && a.contentDisposition === 'inline' ? a.cid.replace(/^<|>$/g, '') : undefined;
      return {
        ...(a.filename || !contentId ? { filename: a.filename || `attachment-${i + 1}` } : {}),
        content: a.content.toString('base64'),
        content_type: a.contentType,
        ...(contentId ? { content_id: contentId } : {}),
      };
    }),
  };
}
