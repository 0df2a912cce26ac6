import addressparser from 'nodemailer/lib/addressparser';
import { normalizeEmail } from '../domain/addresses.ts';
import { ValidationError } from '../domain/errors.ts';

/** The bare address of `Name <address>` (or the input when it has no angle brackets). */
export function addressOf(mailbox: string): string {
  const match = /<([^<>]+)>\s*$/.exec(mailbox);
  return (match ? match[1] : mailbox).trim();
}

export interface Mailbox {
  name: string;
  address: string;
}

/** Parses one `address` or `Name <address>`; refuses CR/LF, groups and lists. */
export function parseMailbox(input: string, field: string): Mailbox {
  if (/[\r\n]/.test(input)) throw new ValidationError(`\`${field}\` must not contain line breaks`);
  const parsed = addressparser(input, { flatten: true }) as { name: string; address: string }[];
  if (parsed.length !== 1 || !parsed[0].address) {
    throw new ValidationError(
      `\`${field}\` must be one address or "Name <address>", got "${input.slice(0, 100)}"`,
    );
  }
  return { name: parsed[0].name, address: normalizeEmail(parsed[0].address, field) };
}

/** Formats a mailbox for a header; nodemailer encodes non-ASCII names. */
export function formatMailbox(m: Mailbox): string {
  return m.name ? `${JSON.stringify(m.name)} <${m.address}>` : m.address;
}
