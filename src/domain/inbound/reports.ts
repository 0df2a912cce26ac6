import { sql } from 'kysely';
import type { Db, Tx } from '../../db/database.ts';
import { addressOf } from '../../mail/address.ts';
import type { MailReport } from '../../mail/reports.ts';
import type { DomainContext } from '../core/context.ts';
import { isUuid } from '../core/ids.ts';
import { recordEmailEvents } from '../emails/events.ts';
import { suppress } from '../emails/suppressions.ts';

export interface ReportOutcome {
  emailId: string | null;
  applied: string[];
}

/**
 * Where a report came from, written on each event it records: by default `dsn` or `arf` (mail to
 * the MX); a provider's feedback names itself (`ses`) and adds what it knows (its message id).
 */
export interface ReportOrigin {
  source?: string;
  detail?: Record<string, unknown>;
}

/**
 * The message a report is about: from the VERP address it came to, else from the returned
 * Message-ID: an email (the service's own mail is one too, in its own project).
 */
async function findReportedEmail(db: Db | Tx, emailId: string | null, report: MailReport) {
  const messageId = report.original?.messageId?.trim() ?? null;
  let id = emailId;
  if (!id && messageId) {
    const local = /^<?([0-9a-f-]{36})@/i.exec(messageId)?.[1];
    id = local && isUuid(local) ? local.toLowerCase() : null;
  }
  if (!id) return undefined;
  // a report found only by Message-ID must name exactly that message
  const named = <T extends { message_id: string }>(row: T | undefined) =>
    row && (emailId || row.message_id === messageId) ? row : undefined;
  return named(
    await db
      .selectFrom('emails')
      .select(['id', 'project_id', 'status', 'message_id', 'to_addresses', 'cc_addresses', 'bcc_addresses'])
      .where('id', '=', id)
      .executeTakeFirst(),
  );
}

/**
 * Applies a delivery status notification or a complaint to the message it is about: a hard bounce
 * marks it `bounced` and suppresses the recipient, a soft bounce records a `deferred` event (the
 * remote server still retries), a complaint marks it `complained` and suppresses the recipient.
 */
export async function applyMailReport(
  ctx: Pick<DomainContext, 'db'>,
  emailId: string | null,
  report: MailReport,
): Promise<ReportOutcome> {
  return ctx.db.transaction().execute((tx) => applyMailReportIn(tx, emailId, report));
}

/** `applyMailReport` inside the caller's transaction (a provider's feedback is recorded with it). */
export async function applyMailReportIn(
  tx: Tx,
  emailId: string | null,
  report: MailReport,
  origin: ReportOrigin = {},
): Promise<ReportOutcome> {
  const email = await findReportedEmail(tx, emailId, report);
  const outcome: ReportOutcome = { emailId: email?.id ?? null, applied: [] };
  const from = (fallback: string) => ({ source: origin.source ?? fallback, ...origin.detail });
  await tx
    .insertInto('mail_reports')
    .values({
      project_id: email?.project_id ?? null,
      email_id: email?.id ?? null,
      kind: report.kind,
      detail: JSON.stringify(report),
    })
    .execute();
  if (!email) return outcome;
  const recipients = [...email.to_addresses, ...email.cc_addresses, ...email.bcc_addresses].map((r) =>
    addressOf(r).toLowerCase(),
  );
  // the reported address when it is one of the message's recipients; else the only recipient
  const recipientOf = (reported: string | null) =>
    reported && recipients.includes(reported.toLowerCase())
      ? reported.toLowerCase()
      : recipients.length === 1
        ? recipients[0]
        : null;
  const events: { type: string; recipient: string | null; detail: Record<string, unknown> }[] = [];
  const suppressions: { email: string; reason: 'hard_bounce' | 'complaint'; detail: string }[] = [];
  let newStatus: 'bounced' | 'complained' | null = null;

  if (report.kind === 'bounce') {
    for (const r of report.recipients) {
      if (r.action !== 'failed' && r.action !== 'delayed') continue;
      const recipient = recipientOf(r.recipient);
      const detail = {
        bounce_type: r.bounceType,
        status: r.status,
        diagnostic: r.diagnostic,
        remote_mta: r.remoteMta,
        ...from('dsn'),
      };
      if (r.bounceType === 'hard') {
        events.push({ type: 'bounced', recipient, detail });
        if (recipient)
          suppressions.push({ email: recipient, reason: 'hard_bounce', detail: r.diagnostic ?? r.status });
        newStatus = 'bounced';
      } else {
        events.push({ type: 'deferred', recipient, detail });
      }
    }
  } else {
    const recipient = recipientOf(report.recipient);
    events.push({
      type: 'complained',
      recipient,
      detail: { feedback_type: report.feedbackType, user_agent: report.userAgent, ...from('arf') },
    });
    if (recipient)
      suppressions.push({ email: recipient, reason: 'complaint', detail: `${report.feedbackType} report` });
    newStatus = 'complained';
  }

  await recordEmailEvents(
    tx,
    events.map((e) => ({ email_id: email.id, project_id: email.project_id, ...e })),
  );
  await suppress(
    tx,
    suppressions.map((s) => ({ projectId: email.project_id, sourceEmailId: email.id, ...s })),
  );
  if (newStatus) {
    // a complaint outranks a bounce; neither undoes a cancellation
    await sql`update emails set status = ${newStatus}, updated_at = now()
               where id = ${email.id} and status not in ('cancelled', 'complained')`.execute(tx);
  }
  outcome.applied = events.map((e) => `${e.type}${e.recipient ? ` ${e.recipient}` : ''}`);
  return outcome;
}
