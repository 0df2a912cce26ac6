import addressparser from 'nodemailer/lib/addressparser';
import { encodeWords, foldLines, isPlainText, quoteString } from 'nodemailer/lib/mime-funcs';
import { encode as qpEncode, wrap as qpWrap } from 'nodemailer/lib/qp';
import type { ComposeInput } from './compose.ts';
import { htmlToText } from './html-to-text.ts';

// the two forms a stored recipient takes (mail/address.ts formatMailbox): a bare address, or a
// quoted name without escapes before one; addressparser reads both as these same parts
const BARE_ADDRESS = /^[^\s<>"(),;:\\[\]@]+@[^\s<>"(),;:\\[\]@]+$/;
const QUOTED_NAME = /^"([^"\\]*)" <([^\s<>"(),;:\\[\]@]+@[^\s<>"(),;:\\[\]@]+)>$/;

/** A recipient as the row keeps it, read into its name and address (addressparser for any other form). */
export function mailboxParts(value: string): { name: string; address: string } | undefined {
  if (BARE_ADDRESS.test(value)) return { name: '', address: value };
  const quoted = QUOTED_NAME.exec(value);
  if (quoted && quoted[1].trim() === quoted[1] && !/\s{2}/.test(quoted[1]))
    return { name: quoted[1], address: quoted[2] };
  return (addressparser(value, { flatten: true }) as { name: string; address: string }[])[0];
}

/**
 * A direct MIME writer for the common message (text and/or HTML, no attachments): the same
 * structure nodemailer's composer produces, without its stream machinery, which costs more than
 * the DKIM signature. Header values are either validated free of line breaks or encoded here, so
 * nothing a sender supplies can start a new header line.
 */
function mailbox(value: string): string {
  const parsed = mailboxParts(value);
  if (!parsed) return value;
  if (!parsed.name) return parsed.address;
  const name = isPlainText(parsed.name)
    ? /^[\w ]*$/.test(parsed.name)
      ? parsed.name
      : quoteString(parsed.name)
    : encodeWords(parsed.name, 'Q', 52);
  return `${name} <${parsed.address}>`;
}

function header(name: string, value: string): string {
  return foldLines(`${name}: ${value}`, 76);
}

function textValue(value: string): string {
  return isPlainText(value) ? value : encodeWords(value, 'Q', 52);
}

// a character quoted-printable must encode, or whitespace ending a line (nodemailer's qp encode)
const QP_ENCODED = /[^\t\r\n\x20-\x3c\x3e-\x7e]|[ \t](?=[\r\n]|$)/;

/** Quoted-printable with soft breaks; text that needs no encoding is wrapped as it is. */
export function qp(body: string): string {
  return qpWrap(QP_ENCODED.test(body) ? qpEncode(body) : body, 76);
}

export function canComposeFast(input: ComposeInput): boolean {
  return input.attachments.length === 0;
}

export function composeFast(input: ComposeInput): Buffer {
  const date = input.date ?? new Date();
  const lines: string[] = [];
  lines.push(header('From', mailbox(input.from)));
  if (input.to.length) lines.push(header('To', input.to.map(mailbox).join(', ')));
  if (input.cc.length) lines.push(header('Cc', input.cc.map(mailbox).join(', ')));
  if (input.replyTo.length) lines.push(header('Reply-To', input.replyTo.map(mailbox).join(', ')));
  lines.push(header('Subject', textValue(input.subject)));
  lines.push(`Message-ID: ${input.messageId}`);
  lines.push(`Date: ${date.toUTCString().replace(/GMT$/, '+0000')}`);
  lines.push('MIME-Version: 1.0');
  for (const [name, value] of Object.entries(input.headers)) lines.push(header(name, textValue(value)));
  lines.push(`X-Posthorn-Project: ${input.projectId}`);
  lines.push(`X-Posthorn-Stream: ${input.stream}`);
  lines.push(
    header(
      'Feedback-ID',
      [input.stream, ...(input.feedbackTags ?? []), input.projectId, 'posthorn'].join(':'),
    ),
  );

  const text = input.text ?? (input.html ? htmlToText(input.html) : '');
  const parts: { type: string; body: string }[] = [];
  if (text) parts.push({ type: 'text/plain', body: text });
  if (input.html) parts.push({ type: 'text/html', body: input.html });
  if (parts.length === 1) {
    lines.push(
      `Content-Type: ${parts[0].type}; charset=utf-8`,
      'Content-Transfer-Encoding: quoted-printable',
      '',
      qp(parts[0].body),
    );
  } else {
    // unique per message without a call into the random source: the Message-ID is already unique
    const boundary = `--_posthorn_${input.messageId.replace(/[^A-Za-z0-9]/g, '')}`;
    lines.push(`Content-Type: multipart/alternative; boundary="${boundary}"`, '');
    for (const part of parts) {
      lines.push(
        `--${boundary}`,
        `Content-Type: ${part.type}; charset=utf-8`,
        'Content-Transfer-Encoding: quoted-printable',
        '',
        qp(part.body),
      );
    }
    lines.push(`--${boundary}--`);
  }
  return Buffer.from(`${lines.join('\r\n')}\r\n`, 'utf8');
}
