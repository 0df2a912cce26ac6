import { sql } from 'kysely';
import type { Db, Tx } from '../../db/database.ts';
import type { ProviderFeedbackOutcome } from '../../db/schema.ts';
import type { BounceRecipient, MailReport } from '../../mail/reports.ts';
import type { DomainContext } from '../core/context.ts';
import { isUuid } from '../core/ids.ts';
import { recordEmailEvents } from '../emails/events.ts';
import { applyMailReportIn } from '../inbound/reports.ts';
import { countProviderFeedback } from '../maintenance/metrics.ts';
import type { SnsMessage } from './sns-signature.ts';

/**
 * Amazon SES's events, as its configuration sets (or identities) publish them to SNS: what is read
 * of them. Every field may be missing; the notification itself is kept whole.
 */
interface SesEvent {
  eventType?: string;
  notificationType?: string;
  mail?: { messageId?: string; tags?: Record<string, string[]> };
  bounce?: {
    bounceType?: string;
    bounceSubType?: string;
    bouncedRecipients?: { emailAddress?: string; status?: string; diagnosticCode?: string }[];
    reportingMTA?: string;
    remoteMtaIp?: string;
    feedbackId?: string;
  };
  complaint?: {
    complainedRecipients?: { emailAddress?: string }[];
    complaintFeedbackType?: string;
    complaintSubType?: string | null;
    userAgent?: string;
    arrivalDate?: string;
    feedbackId?: string;
  };
  delivery?: {
    recipients?: string[];
    smtpResponse?: string;
    reportingMTA?: string;
    processingTimeMillis?: number;
  };
  deliveryDelay?: {
    delayType?: string;
    delayedRecipients?: { emailAddress?: string; status?: string; diagnosticCode?: string }[];
    reportingMTA?: string;
  };
  reject?: { reason?: string };
}

/** The events that change an email; every other kind (Send, Open, Click, ...) is kept and changes nothing. */
const APPLIED = new Set(['Bounce', 'Complaint', 'Delivery', 'DeliveryDelay', 'Reject']);

/** The message SES names, as this service knows it (the service's own mail is an email like any). */
type Target = { kind: 'email'; id: string; projectId: string } | null;

/** What a notification did. */
export interface FeedbackResult {
  outcome: ProviderFeedbackOutcome;
  /** The same SNS MessageId came before: nothing was done again. */
  duplicate: boolean;
  kind: string | null;
  emailId: string | null;
}

const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);

/**
 * The message a notification is about: the email whose hand-over SES answered with that
 * MessageId (on its sent event), else one of the service's own. The `posthorn_email` tag, when
 * present, must name the same email: a notification is never applied by its tag alone, which
 * anyone who received the message could copy into a notification of their own topic.
 */
async function findTarget(
  db: Db | Tx,
  providerMessageId: string | null,
  tagged: string | null,
): Promise<Target> {
  if (!providerMessageId) return null;
  const sent = await db
    .selectFrom('email_events')
    .select(['email_id', 'project_id'])
    .where(sql<boolean>`detail ? 'provider_message_id'`)
    .where(sql<string>`detail ->> 'provider_message_id'`, '=', providerMessageId)
    .limit(1)
    .executeTakeFirst();
  if (sent)
    return !tagged || tagged === sent.email_id
      ? { kind: 'email', id: sent.email_id, projectId: sent.project_id }
      : null;
  return null;
}

/** SES's bounce or delay as the MX reads a DSN: one entry per recipient. */
function bounceReport(event: SesEvent, kind: 'Bounce' | 'DeliveryDelay'): MailReport {
  const permanent = kind === 'Bounce' && event.bounce?.bounceType === 'Permanent';
  const listed =
    kind === 'Bounce'
      ? (event.bounce?.bouncedRecipients ?? [])
      : (event.deliveryDelay?.delayedRecipients ?? []);
  const recipients: BounceRecipient[] = listed.flatMap((r) => {
    const recipient = text(r.emailAddress)?.toLowerCase();
    if (!recipient) return [];
    return [
      {
        recipient,
        action: permanent ? 'failed' : 'delayed',
        status: text(r.status) ?? (permanent ? '5.0.0' : '4.0.0'),
        bounceType: permanent ? 'hard' : 'soft',
        // SES writes the remote server's reply as a DSN does: `smtp; 550 5.1.1 ...`
        diagnostic: text(r.diagnosticCode)?.replace(/^smtp;\s*/i, '') ?? null,
        remoteMta: text(event.bounce?.remoteMtaIp),
      },
    ];
  });
  const reportingMta = text(
    kind === 'Bounce' ? event.bounce?.reportingMTA : event.deliveryDelay?.reportingMTA,
  );
  return { kind: 'bounce', recipients, original: null, reportingMta };
}

/** SES's complaint as the MX reads an ARF report: one per complaining recipient. */
function complaintReports(event: SesEvent): MailReport[] {
  const c = event.complaint ?? {};
  const recipients = (c.complainedRecipients ?? []).map((r) => text(r.emailAddress)?.toLowerCase() ?? null);
  return (recipients.length > 0 ? recipients : [null]).map((recipient) => ({
    kind: 'complaint',
    feedbackType: text(c.complaintFeedbackType) ?? 'abuse',
    recipient,
    userAgent: text(c.userAgent),
    sourceIp: null,
    arrivalDate: text(c.arrivalDate),
    original: null,
  }));
}

/** A Delivery: a `delivered` event per recipient, and the email `delivered` when it was `sent`. */
async function applyDelivery(tx: Tx, target: Target, event: SesEvent, providerMessageId: string) {
  if (target?.kind !== 'email') return;
  const d = event.delivery ?? {};
  const recipients = (d.recipients ?? []).map((r) => text(r)?.toLowerCase() ?? null);
  const detail = {
    response: text(d.smtpResponse),
    remote_mta: text(d.reportingMTA),
    processing_time_ms: typeof d.processingTimeMillis === 'number' ? d.processingTimeMillis : null,
    source: 'ses',
    provider_message_id: providerMessageId,
  };
  await recordEmailEvents(
    tx,
    (recipients.length > 0 ? recipients : [null]).map((recipient) => ({
      email_id: target.id,
      project_id: target.projectId,
      type: 'delivered',
      recipient,
      detail,
    })),
  );
  await sql`update emails set status = 'delivered', updated_at = now()
             where id = ${target.id} and status = 'sent'`.execute(tx);
}

/** A Reject: SES took the message, then refused to send it (a virus): it fails, nobody is blamed. */
async function applyReject(tx: Tx, target: Target, event: SesEvent, providerMessageId: string) {
  const reason = `SES rejected the message: ${text(event.reject?.reason) ?? 'no reason given'}`;
  if (target?.kind !== 'email') return;
  await recordEmailEvents(tx, [
    {
      email_id: target.id,
      project_id: target.projectId,
      type: 'failed',
      recipient: null,
      detail: { reason, source: 'ses', provider_message_id: providerMessageId },
    },
  ]);
  await sql`update emails set status = 'failed', updated_at = now()
             where id = ${target.id} and status in ('sending', 'sent', 'deferred')`.execute(tx);
}

/** Applies one SES event to the message it names, inside the caller's transaction. */
async function applySesEvent(
  tx: Tx,
  kind: string,
  target: Target,
  event: SesEvent,
  providerMessageId: string,
) {
  const emailId = target?.id ?? null;
  const origin = (detail: Record<string, unknown>) => ({
    source: 'ses',
    detail: { provider_message_id: providerMessageId, ...detail },
  });
  switch (kind) {
    case 'Bounce':
      await applyMailReportIn(
        tx,
        emailId,
        bounceReport(event, 'Bounce'),
        origin({
          bounce_subtype: text(event.bounce?.bounceSubType),
          feedback_id: text(event.bounce?.feedbackId),
        }),
      );
      return;
    case 'DeliveryDelay':
      await applyMailReportIn(
        tx,
        emailId,
        bounceReport(event, 'DeliveryDelay'),
        origin({ delay_type: text(event.deliveryDelay?.delayType) }),
      );
      return;
    case 'Complaint':
      for (const report of complaintReports(event))
        await applyMailReportIn(
          tx,
          emailId,
          report,
          origin({
            complaint_subtype: text(event.complaint?.complaintSubType),
            feedback_id: text(event.complaint?.feedbackId),
          }),
        );
      return;
    case 'Delivery':
      await applyDelivery(tx, target, event, providerMessageId);
      return;
    case 'Reject':
      await applyReject(tx, target, event, providerMessageId);
      return;
  }
}

/** The notification's SES event, or null when its Message is not one (kept, and changes nothing). */
function sesEventOf(message: SnsMessage): SesEvent | null {
  try {
    const parsed = JSON.parse(message.Message);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as SesEvent)
      : null;
  } catch {
    return null;
  }
}

/**
 * Records one verified SNS notification of SES: a Bounce, Complaint or DeliveryDelay becomes what
 * the MX makes of a DSN or an ARF report (the same events, statuses, suppressions and webhooks,
 * with `source: "ses"`), a Delivery a `delivered` event, a Reject a failure. The notification is
 * kept once (by its SNS MessageId) in the same transaction as what it did, so a notification
 * delivered twice is applied once; one about no message of ours is kept as `unmatched` and counted.
 */
export async function recordSesNotification(
  ctx: Pick<DomainContext, 'db'>,
  message: SnsMessage,
): Promise<FeedbackResult> {
  const event = sesEventOf(message);
  const kind = text(event?.eventType) ?? text(event?.notificationType);
  const providerMessageId = text(event?.mail?.messageId);
  const taggedValue = text(event?.mail?.tags?.posthorn_email?.[0])?.toLowerCase() ?? null;
  const tagged = taggedValue && isUuid(taggedValue) ? taggedValue : null;
  const target = event && kind ? await findTarget(ctx.db, providerMessageId, tagged) : null;
  const outcome: ProviderFeedbackOutcome =
    !kind || !APPLIED.has(kind) ? 'ignored' : target ? 'applied' : 'unmatched';
  const duplicate = await ctx.db.transaction().execute(async (tx) => {
    const kept = await keepNotification(tx, message, {
      kind,
      outcome,
      providerMessageId,
      target,
      detail: { ...message, Message: event ?? message.Message },
    });
    if (!kept) return true;
    if (outcome === 'applied' && kind && providerMessageId)
      await applySesEvent(tx, kind, target, event as SesEvent, providerMessageId);
    return false;
  });
  if (!duplicate) countProviderFeedback('ses', kind ?? 'unknown', outcome);
  return { outcome, duplicate, kind, emailId: target?.kind === 'email' ? target.id : null };
}

/** Keeps a notification once; false when its SNS MessageId was kept before (nothing to do again). */
async function keepNotification(
  tx: Tx,
  message: SnsMessage,
  what: {
    kind: string | null;
    outcome: ProviderFeedbackOutcome;
    providerMessageId?: string | null;
    target?: Target;
    detail: Record<string, unknown>;
  },
): Promise<boolean> {
  const target = what.target ?? null;
  const kept = await tx
    .insertInto('provider_feedback')
    .values({
      provider: 'ses',
      notification_id: message.MessageId,
      type: message.Type,
      kind: what.kind,
      outcome: what.outcome,
      provider_message_id: what.providerMessageId ?? null,
      email_id: target?.kind === 'email' ? target.id : null,
      project_id: target?.kind === 'email' ? target.projectId : null,
      topic_arn: message.TopicArn,
      detail: JSON.stringify(what.detail),
    })
    .onConflict((oc) => oc.columns(['provider', 'notification_id']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return kept !== undefined;
}

/**
 * Takes SNS's subscription messages for the SES topic. A SubscriptionConfirmation is confirmed by
 * fetching its SubscribeURL, but only on SNS's own host over https (or, with
 * POSTHORN_SNS_TEST_CERT, on this machine): any other URL is never fetched and the subscription is
 * kept as `not_confirmed`. A confirmation that SNS does not answer with a 2xx throws, and nothing
 * is kept, so SNS's retry can confirm it. An UnsubscribeConfirmation is kept and changes nothing.
 */
export async function recordSesSubscription(
  ctx: DomainContext,
  message: SnsMessage,
  trusted: (url: string) => boolean,
): Promise<FeedbackResult> {
  const url = message.SubscribeURL ?? '';
  let outcome: ProviderFeedbackOutcome = 'ignored';
  let answer: string | null = null;
  if (message.Type === 'SubscriptionConfirmation') {
    if (trusted(url)) {
      const res = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(10_000) });
      await res.body?.cancel();
      if (!res.ok) throw new Error(`SNS answered the subscription's confirmation with HTTP ${res.status}`);
      outcome = 'confirmed';
      answer = `HTTP ${res.status}`;
    } else {
      outcome = 'not_confirmed';
      answer = 'SubscribeURL is not on an SNS host (sns.<region>.amazonaws.com over https): not fetched';
    }
  }
  const kept = await ctx.db.transaction().execute((tx) =>
    keepNotification(tx, message, {
      kind: null,
      outcome,
      detail: { ...message, confirmation: answer },
    }),
  );
  if (kept) countProviderFeedback('ses', message.Type, outcome);
  return { outcome, duplicate: !kept, kind: null, emailId: null };
}
