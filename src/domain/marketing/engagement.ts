import { sql } from 'kysely';
import type { Tx } from '../../db/database.ts';
import { updateContact } from '../audience/contacts.ts';
import type { DomainContext } from '../core/context.ts';
import { recordEmailEvents } from '../emails/events.ts';
import { suppress } from '../emails/suppressions.ts';
import { isCanary } from '../reputation/unsubscribe-check.ts';
import { emailTopic, leaveTopic, readerTopics, saveTopics, senderOf } from './preferences.ts';
import { readToken } from './tokens.ts';
import { type UserAgentClass, userAgentClass } from './user-agents.ts';

/**
 * What people do with marketing mail, as events on the email's timeline (announced to webhooks by
 * the one event recorder): `opened`, `clicked` and `unsubscribed`. Every entry point starts from a
 * signed token, so a forged one is refused before any read.
 */

/** Who is asking: the request's user agent and method (HEAD is never a person), and its address. */
export interface Requester {
  userAgent?: string | null;
  method?: string;
  ip?: string | null;
}

async function trackedEmail(ctx: Pick<DomainContext, 'db'>, emailId: string) {
  return ctx.db
    .selectFrom('emails')
    .select(['id', 'project_id', 'to_addresses', 'sent_at', 'contact_id'])
    .where('id', '=', emailId)
    .executeTakeFirst();
}

type TrackedEmail = NonNullable<Awaited<ReturnType<typeof trackedEmail>>>;

/** Serialises engagement writes of one email, so `first` and idempotency hold under concurrency. */
async function lockEmail(tx: Tx, emailId: string) {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`posthorn/engagement/${emailId}`}, 0))`.execute(
    tx,
  );
}

/**
 * Records an `opened` or `clicked` event. `first` is true for the email's first event of that type
 * from that class of fetcher, so unique human opens are `first` human events whatever machines did.
 */
async function recordEngagement(
  ctx: DomainContext,
  email: TrackedEmail,
  type: 'opened' | 'clicked',
  who: Requester,
  extra: Record<string, unknown> = {},
) {
  const sinceSentMs = email.sent_at ? Date.now() - email.sent_at.getTime() : null;
  const cls: UserAgentClass = userAgentClass(who.userAgent, who.method ?? 'GET', sinceSentMs);
  await ctx.db.transaction().execute(async (tx) => {
    await lockEmail(tx, email.id);
    const earlier = await tx
      .selectFrom('email_events')
      .select('id')
      .where('email_id', '=', email.id)
      .where('type', '=', type)
      .where(sql<string>`detail->>'user_agent_class'`, '=', cls)
      .limit(1)
      .executeTakeFirst();
    await recordEmailEvents(tx, [
      {
        email_id: email.id,
        project_id: email.project_id,
        type,
        recipient: email.to_addresses[0] ?? null,
        detail: { user_agent_class: cls, ...extra, first: !earlier },
      },
    ]);
  });
}

/** The open pixel: records `opened`; false when the token is not one of ours (nothing recorded). */
export async function recordOpen(ctx: DomainContext, token: string, who: Requester): Promise<boolean> {
  const ids = readToken(ctx, 'open', token);
  if (!ids) return false;
  const email = await trackedEmail(ctx, ids.emailId);
  if (email) await recordEngagement(ctx, email, 'opened', who);
  return true;
}

/**
 * A tracked link: records `clicked` and returns the destination signed into the token (never one
 * taken from the request), or null when the token is not one of ours. The link of a since-deleted
 * email still leads where it led, with nothing recorded.
 */
export async function recordClick(ctx: DomainContext, token: string, who: Requester): Promise<string | null> {
  const ids = readToken(ctx, 'click', token);
  if (!ids) return null;
  const email = await trackedEmail(ctx, ids.emailId);
  if (email) await recordEngagement(ctx, email, 'clicked', who, { url: ids.url, link_index: ids.linkIndex });
  return ids.url;
}

/** The email and contact an unsubscribe token names, when both still exist (in one project). */
async function subscriber(ctx: DomainContext, token: string) {
  const ids = readToken(ctx, 'unsubscribe', token);
  if (!ids) return null;
  const email = await trackedEmail(ctx, ids.emailId);
  if (!email) return null;
  const contact = await ctx.db
    .selectFrom('contacts')
    .select(['id', 'email', 'subscribed', 'properties'])
    .where('id', '=', ids.contactId)
    .where('project_id', '=', email.project_id)
    .executeTakeFirst();
  return contact ? { email, contact } : null;
}

/** The lists the email's campaign went to that the contact is still a subscribed member of. */
async function campaignLists(db: DomainContext['db'] | Tx, emailId: string, contactId: string) {
  const { rows } = await sql<{ id: string; name: string }>`
    select l.id, l.name from emails e
      join campaigns c on c.id = e.campaign_id
      join lists l on l.id = any(c.list_ids)
      join list_members m on m.list_id = l.id and m.contact_id = ${contactId} and m.subscribed
     where e.id = ${emailId}
     order by l.name`.execute(db);
  return rows;
}

/**
 * What the preference page shows: the address, whether it still gets marketing, the lists of the
 * campaign it may leave (by name), the project's public topics with the reader's state, the topic
 * the message was sent for, and who sent it (the project's name, the message's From); null for a
 * bad token.
 */
export async function preferences(ctx: DomainContext, token: string) {
  const found = await subscriber(ctx, token);
  if (!found) return null;
  const { email, contact } = found;
  const [listed, lists, topics, topic, sender] = await Promise.all([
    ctx.db
      .selectFrom('suppressions')
      .select('reason')
      .where('project_id', '=', email.project_id)
      .where('email', '=', contact.email)
      .executeTakeFirst(),
    campaignLists(ctx.db, email.id, contact.id),
    readerTopics(ctx.db, email.project_id, contact.id),
    emailTopic(ctx.db, email.id),
    senderOf(ctx.db, email.id),
  ]);
  const subscribed = contact.subscribed && !listed;
  return {
    email: contact.email,
    subscribed,
    lists: subscribed ? lists.map((l) => l.name) : [],
    topics,
    topic,
    project: sender?.project ?? '',
    from: sender?.from ?? '',
  };
}

/**
 * The preference page's topic switches (`saveTopics`), recorded with source `preference_page`;
 * null for a bad token. A reader unsubscribed from all marketing changes nothing here: the page
 * offers them Resubscribe instead.
 */
export async function savePreferences(
  ctx: DomainContext,
  token: string,
  form: Record<string, unknown>,
  who: Requester = {},
) {
  const found = await subscriber(ctx, token);
  if (!found) return null;
  const changed = found.contact.subscribed ? await saveTopics(ctx, found, form, who.ip ?? null) : 0;
  return { changed };
}

/**
 * Leaves the lists the email's campaign went to (the contact's membership is marked unsubscribed,
 * which later campaigns to those lists respect), and nothing else: other marketing still arrives.
 * Records `unsubscribed` with `{scope: "list"}` on the email. Null when the email names no list
 * the contact is still on: the caller then leaves all marketing (a person asking to stop must be
 * stopped).
 */
async function leaveLists(
  ctx: DomainContext,
  { email, contact }: NonNullable<Awaited<ReturnType<typeof subscriber>>>,
) {
  return ctx.db.transaction().execute(async (tx) => {
    await lockEmail(tx, email.id);
    const lists = await campaignLists(tx, email.id, contact.id);
    if (lists.length === 0) return null;
    const ids = lists.map((l) => l.id);
    await tx
      .updateTable('list_members')
      .set({ subscribed: false, updated_at: new Date() })
      .where('contact_id', '=', contact.id)
      .where('list_id', 'in', ids)
      .execute();
    await recordEmailEvents(tx, [
      {
        email_id: email.id,
        project_id: email.project_id,
        type: 'unsubscribed',
        recipient: email.to_addresses[0] ?? null,
        detail: { scope: 'list', list_ids: ids },
      },
    ]);
    return { email: contact.email, subscribed: true, left: lists.map((l) => l.name), changed: true };
  });
}

/**
 * `all` leaves all marketing; `list` leaves the lists the email's campaign was sent to (all
 * marketing when it names none the contact is on); `resubscribe` undoes leaving all; `one_click`
 * (RFC 8058, no scope given) leaves the topic the email was sent for, and all marketing when it
 * was sent for none (or its topic is gone).
 */
export type UnsubscribeScope = 'all' | 'list' | 'resubscribe' | 'one_click';

/**
 * The unsubscribe link (RFC 8058 one-click and the preference page): suppresses the contact's
 * address for marketing and automation (transactional mail still flows), withdraws the contact's
 * consent through the contact update (which announces `contact.unsubscribed`), and records
 * `unsubscribed` on the email. Repeating it changes nothing. Null when the token is not one of ours
 * or its contact is gone.
 */
export async function unsubscribe(
  ctx: DomainContext,
  token: string,
  scope: UnsubscribeScope,
  who: Requester = {},
) {
  const found = await subscriber(ctx, token);
  if (!found) return null;
  const { email, contact } = found;
  // the bulk-sender gate's canary (reputation/unsubscribe-check.ts): unsubscribed, nothing announced
  if (isCanary(contact)) {
    await ctx.db.updateTable('contacts').set({ subscribed: false }).where('id', '=', contact.id).execute();
    return { email: contact.email, subscribed: false, changed: true };
  }
  if (scope === 'resubscribe') return resubscribe(ctx, found, who);
  if (scope === 'one_click') {
    const topic = await emailTopic(ctx.db, email.id);
    if (topic) {
      await leaveTopic(ctx, found, topic.id, who.ip ?? null);
      return { email: contact.email, subscribed: true, leftTopic: topic.name, changed: true };
    }
  }
  if (scope === 'list') {
    const left = await leaveLists(ctx, found);
    if (left) return left;
  }
  const changed = await ctx.db.transaction().execute(async (tx) => {
    await lockEmail(tx, email.id);
    const listed = await tx
      .selectFrom('suppressions')
      .select('reason')
      .where('project_id', '=', email.project_id)
      .where('email', '=', contact.email)
      .executeTakeFirst();
    // an address already suppressed (a bounce blocks more than an unsubscribe) keeps its reason
    if (!listed)
      await suppress(tx, [
        { projectId: email.project_id, email: contact.email, reason: 'unsubscribe', sourceEmailId: email.id },
      ]);
    const changes = !listed || contact.subscribed;
    if (changes)
      await recordEmailEvents(tx, [
        {
          email_id: email.id,
          project_id: email.project_id,
          type: 'unsubscribed',
          recipient: email.to_addresses[0] ?? null,
          detail: { scope: 'all' },
        },
      ]);
    return changes;
  });
  // after a crash between the two steps, the next request (mailbox providers retry) finishes it
  if (contact.subscribed)
    await updateContact(ctx, email.project_id, contact.id, {
      subscribed: false,
      // the mailbox's one-click is the unsubscribe link's; a choice on the page is the page's
      consent: {
        status: 'withdrawn',
        source: scope === 'one_click' ? 'unsubscribe_link' : 'preference_page',
        ip: who.ip ?? null,
      },
    });
  return { email: contact.email, subscribed: false, changed };
}

async function resubscribe(
  ctx: DomainContext,
  { email, contact }: NonNullable<Awaited<ReturnType<typeof subscriber>>>,
  who: Requester,
) {
  const removed = await ctx.db
    .deleteFrom('suppressions')
    .where('project_id', '=', email.project_id)
    .where('email', '=', contact.email)
    .where('reason', '=', 'unsubscribe')
    .executeTakeFirst();
  if (!contact.subscribed)
    await updateContact(ctx, email.project_id, contact.id, {
      subscribed: true,
      consent: { status: 'granted', source: 'preference_page', ip: who.ip ?? null },
    });
  return {
    email: contact.email,
    subscribed: true,
    changed: !contact.subscribed || Number(removed.numDeletedRows) > 0,
  };
}
