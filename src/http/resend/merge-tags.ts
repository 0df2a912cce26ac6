/**
 * Resend's merge tags in broadcasts (issue 51), as Posthorn's Liquid: what a broadcast's subject,
 * preview text and bodies say is translated once, when the broadcast is created or updated, and
 * kept as the campaign's Liquid (nothing stored twice). Resend writes a contact's field in triple
 * braces, with an optional fallback after `|`:
 *
 * | Resend | Posthorn |
 * |---|---|
 * | `{{{FIRST_NAME\|there}}}`, `{{{contact.first_name\|there}}}` | `{{ contact.first_name \| default: "there" }}` |
 * | `{{{LAST_NAME}}}`, `{{{contact.last_name}}}` | `{{ contact.last_name }}` |
 * | `{{{EMAIL}}}`, `{{{contact.email}}}` | `{{ contact.email }}` |
 * | `{{{contact.plan}}}` (any other property) | `{{ contact.properties.plan }}` |
 * | `{{{RESEND_UNSUBSCRIBE_URL}}}` | `{{ preferences_url }}`: the reader's unsubscribe and preference page |
 *
 * Anything else in triple braces is left as written (Posthorn's Liquid then names it).
 */

const CONTACT_FIELDS: Record<string, string> = {
  first_name: 'contact.first_name',
  last_name: 'contact.last_name',
  email: 'contact.email',
};

const LEGACY: Record<string, string> = {
  FIRST_NAME: 'contact.first_name',
  LAST_NAME: 'contact.last_name',
  EMAIL: 'contact.email',
  RESEND_UNSUBSCRIBE_URL: 'preferences_url',
};

const TAG = /\{\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(?:\|([^{}]*?))?\s*\}\}\}/g;

/** The Liquid variable a Resend merge tag names, or null when it is none of Resend's. */
function variableOf(name: string): string | null {
  if (LEGACY[name]) return LEGACY[name];
  const field = /^contact\.([A-Za-z0-9_]+)$/.exec(name)?.[1];
  if (!field) return null;
  return CONTACT_FIELDS[field] ?? `contact.properties.${field}`;
}

/** A Liquid string literal (Liquid has no escapes: the quote the text lacks is used). */
function literal(text: string): string {
  if (!text.includes('"')) return `"${text}"`;
  if (!text.includes("'")) return `'${text}'`;
  return `"${text.replaceAll('"', '')}"`;
}

/** The text with Resend's merge tags as Posthorn's Liquid. */
export function liquidOfMergeTags(text: string): string;
export function liquidOfMergeTags(text: string | undefined): string | undefined;
export function liquidOfMergeTags(text: string | undefined): string | undefined {
  if (text === undefined || !text.includes('{{{')) return text;
  return text.replace(TAG, (tag, name: string, fallback: string | undefined) => {
    const variable = variableOf(name);
    if (!variable) return tag;
    const given = fallback?.trim();
    return given ? `{{ ${variable} | default: ${literal(given)} }}` : `{{ ${variable} }}`;
  });
}
