import { domainToASCII } from 'node:url';
import addressparser from 'nodemailer/lib/addressparser';
import type { Mailbox } from '../../mail/address.ts';
import { ValidationError } from './errors.ts';

// local part: the dot-atom most providers accept (no quoted strings, no comments)
const LOCAL_PART = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const DOMAIN_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const PLAIN_HOSTNAME = /^[a-z0-9.-]+$/;
// what most senders write: `address` or `Name <address>` with a plain name (letters, digits, single
// spaces, _ and -) and a dot-atom address, which addressparser would read as the same two parts
const SIMPLE_MAILBOX =
  /^(?:([\p{L}\p{N}_-]+(?: [\p{L}\p{N}_-]+)*) ?<([A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@[A-Za-z0-9.-]+)>|([A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@[A-Za-z0-9.-]+))$/u;

/** Validates a hostname (IDN accepted, converted to punycode); returns it lower-cased or null. */
export function normalizeHostname(input: string): string | null {
  const lower = input.trim().toLowerCase();
  // plain ASCII names (no punycode to check) are already what domainToASCII would answer
  const ascii = PLAIN_HOSTNAME.test(lower) && !lower.includes('xn--') ? lower : domainToASCII(lower);
  if (!ascii || ascii.length > 253) return null;
  const labels = ascii.split('.');
  if (labels.length < 2) return null;
  if (!labels.every((l) => DOMAIN_LABEL.test(l))) return null;
  if (/^\d+$/.test(labels[labels.length - 1])) return null; // an IP address, not a domain
  return ascii;
}

/** Validates an email address and returns it with the domain lower-cased (IDN to punycode). */
export function normalizeEmail(input: unknown, field = 'email'): string {
  if (typeof input !== 'string') throw new ValidationError(`\`${field}\` must be a string`);
  const value = input.trim();
  const at = value.lastIndexOf('@');
  if (at <= 0 || value.length > 254) {
    throw new ValidationError(`\`${field}\` must be a valid email address, got "${input.slice(0, 100)}"`);
  }
  const local = value.slice(0, at);
  const domain = normalizeHostname(value.slice(at + 1));
  if (local.length > 64 || !LOCAL_PART.test(local) || !domain) {
    throw new ValidationError(`\`${field}\` must be a valid email address, got "${input.slice(0, 100)}"`);
  }
  return `${local}@${domain}`;
}

/** Parses one `address` or `Name <address>`; refuses CR/LF, groups and lists. */
export function parseMailbox(input: string, field: string): Mailbox {
  if (/[\r\n]/.test(input)) throw new ValidationError(`\`${field}\` must not contain line breaks`);
  const simple = SIMPLE_MAILBOX.exec(input);
  if (simple) return { name: simple[1] ?? '', address: normalizeEmail(simple[2] ?? simple[3], field) };
  return parseAnyMailbox(input, field);
}

/** parseMailbox through addressparser, for every form (quoted names, comments, encoded words). */
export function parseAnyMailbox(input: string, field: string): Mailbox {
  if (/[\r\n]/.test(input)) throw new ValidationError(`\`${field}\` must not contain line breaks`);
  const parsed = addressparser(input, { flatten: true }) as { name: string; address: string }[];
  if (parsed.length !== 1 || !parsed[0].address) {
    throw new ValidationError(
      `\`${field}\` must be one address or "Name <address>", got "${input.slice(0, 100)}"`,
    );
  }
  return { name: parsed[0].name, address: normalizeEmail(parsed[0].address, field) };
}

/**
 * A LIKE pattern matching addresses that start with `search` (any case; %, _ and backslash taken
 * literally), for a prefix search through the `text_pattern_ops` index of stored lower-case addresses.
 */
export function addressPrefixPattern(search: string): string {
  return `${search
    .trim()
    .toLowerCase()
    .replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
