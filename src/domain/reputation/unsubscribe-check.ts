import { randomBytes } from 'node:crypto';
import type { Mailbox } from '../../mail/address.ts';
import type { DomainContext } from '../core/context.ts';
import { emailRow, mailboxOf, renderedBody } from '../emails/email-row.ts';
import { rawEmailSource } from '../emails/raw.ts';
import { applyWrite } from '../emails/write.ts';
import type { Stream } from '../plans/project-facts.ts';

/**
 * The bulk-sender gate's unsubscribe check (issue 33, item 3): Gmail and Yahoo require RFC 8058
 * one-click unsubscribe of bulk senders, which they perform as one POST of
 * `List-Unsubscribe=One-Click` to the message's List-Unsubscribe URL, without cookies and without
 * following a page. The check makes a canary contact and one message to it in the project, written
 * as any of the campaign's or flow's (never delivered: its status is `cancelled`), composes the
 * message as delivery would (the same source as GET /emails/{id}/raw), takes the HTTPS URI of its
 * own List-Unsubscribe header, and POSTs to it exactly as a mailbox provider does. It passes when
 * that single request answers 2xx and the canary is unsubscribed. The canary and its message are
 * removed afterwards; its unsubscribe records no event and announces nothing (engagement.ts), so
 * no webhook or flow ever sees it.
 */

/** The contact property that marks a canary (see engagement.ts `unsubscribe`). */
export const CANARY_PROPERTY = 'posthorn_unsubscribe_check';

/** Canaries' addresses: RFC 2606's reserved .invalid, so nothing is ever sent to them. */
const CANARY_DOMAIN = 'unsubscribe-check.posthorn.invalid';

/** Whether a contact is a gate's canary. */
export function isCanary(contact: { properties: unknown }): boolean {
  return (contact.properties as Record<string, unknown> | null)?.[CANARY_PROPERTY] === true;
}

export interface UnsubscribeOutcome {
  ok: boolean;
  message: string;
}

/** The header's value, unfolded (RFC 5322 2.2.3), from a message's header section; null when absent. */
export function headerValue(raw: Buffer, name: string): string | null {
  const head = raw
    .toString('latin1')
    .split(/\r?\n\r?\n/, 1)[0]
    .replace(/\r?\n[ \t]+/g, ' ');
  const wanted = `${name.toLowerCase()}:`;
  for (const line of head.split(/\r?\n/))
    if (line.toLowerCase().startsWith(wanted)) return line.slice(wanted.length).trim();
  return null;
}

/** The first http(s) URI of a List-Unsubscribe value (`<https://…>, <mailto:…>`), or null. */
export function oneClickUri(listUnsubscribe: string): string | null {
  for (const match of listUnsubscribe.matchAll(/<([^>]*)>/g))
    if (/^https?:\/\//i.test(match[1])) return match[1];
  return null;
}

/** The one request a mailbox provider makes (RFC 8058 3.2): no cookies, no redirect followed. */
async function postOneClick(url: string): Promise<{ status: number } | { error: string }> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
      redirect: 'manual',
      signal: AbortSignal.timeout(10_000),
    });
    await res.arrayBuffer().catch(() => undefined);
    return { status: res.status };
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return { error: cause?.code ?? cause?.message ?? (err as Error).message };
  }
}

async function judge(ctx: DomainContext, emailId: string, projectId: string, contactId: string) {
  const raw = await rawEmailSource(ctx, projectId, emailId);
  const header = headerValue(raw, 'List-Unsubscribe');
  const post = headerValue(raw, 'List-Unsubscribe-Post');
  if (!header) return { ok: false, message: 'The message carries no List-Unsubscribe header' };
  const url = oneClickUri(header);
  if (!url)
    return { ok: false, message: `List-Unsubscribe has no HTTPS URI for one-click unsubscribe: ${header}` };
  if (post !== 'List-Unsubscribe=One-Click')
    return { ok: false, message: 'The message lacks `List-Unsubscribe-Post: List-Unsubscribe=One-Click`' };
  const shown = `${new URL(url).origin}/u/…`;
  const answer = await postOneClick(url);
  if ('error' in answer)
    return {
      ok: false,
      message: `The one-click POST to ${shown} could not be made (${answer.error}): mailbox providers cannot reach it either; check POSTHORN_PUBLIC_URL`,
    };
  if (answer.status >= 300)
    return {
      ok: false,
      message: `The one-click POST to ${shown} was answered ${answer.status}${answer.status < 400 ? ' (a redirect: providers do not follow it)' : ''}; check POSTHORN_PUBLIC_URL and the proxy in front of it`,
    };
  const after = await ctx.db
    .selectFrom('contacts')
    .select('subscribed')
    .where('id', '=', contactId)
    .executeTakeFirst();
  if (after?.subscribed !== false)
    return {
      ok: false,
      message: `The one-click POST to ${shown} was answered ${answer.status} but did not unsubscribe the test contact: whatever answers POSTHORN_PUBLIC_URL is not this server`,
    };
  return {
    ok: true,
    message: `One POST of List-Unsubscribe=One-Click to ${shown}, without cookies or a page in between, unsubscribed a test contact (RFC 8058)`,
  };
}

/**
 * Runs the check for mail of `stream` from `from` in the project (see the file's comment): made,
 * composed, posted to, judged, and cleaned up whatever the outcome.
 */
export async function checkOneClickUnsubscribe(
  ctx: DomainContext,
  projectId: string,
  stream: Stream,
  from: Mailbox,
): Promise<UnsubscribeOutcome> {
  const address = `canary-${randomBytes(8).toString('hex')}@${CANARY_DOMAIN}`;
  const contact = await ctx.db
    .insertInto('contacts')
    .values({
      project_id: projectId,
      email: address,
      properties: JSON.stringify({ [CANARY_PROPERTY]: true }),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const row = {
    ...emailRow({
      projectId,
      origin: { kind: 'request', stream, apiKeyId: null, tags: [], headers: {} },
      status: 'cancelled',
      from,
      to: [mailboxOf(address)],
      body: renderedBody(
        { subject: 'Unsubscribe check', html: '<p>A check of the unsubscribe link.</p>' },
        null,
        null,
      ),
    }),
    contact_id: contact.id,
  };
  try {
    await applyWrite(ctx.db, {
      emails: [row],
      attachments: [],
      events: [],
      usage: [],
      jobs: [],
      immediate: [],
    });
    return await judge(ctx, row.id, projectId, contact.id);
  } finally {
    await ctx.db.deleteFrom('email_events').where('email_id', '=', row.id).execute();
    await ctx.db.deleteFrom('emails').where('id', '=', row.id).execute();
    await ctx.db.deleteFrom('contacts').where('id', '=', contact.id).execute();
  }
}
