import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import { deliveryJobKey, enqueue, type JobSpec } from '../../db/enqueue.ts';
import type { EmailStatus, EmailsTable } from '../../db/schema.ts';
import {
  type DeliveryError,
  type DeliveryResult,
  isPermanent,
  type RecipientResult,
} from '../../delivery/transport.ts';
import type { DomainContext } from '../core/context.ts';
import { countDeliveries } from '../maintenance/metrics.ts';
import { type EmailEventInput, recordEmailEvents } from './events.ts';
import { nextAttemptAt } from './hand-over.ts';
import { type SuppressionReason, suppress } from './suppressions.ts';

export type EmailRow = Selectable<EmailsTable>;

type TimelineEvent = Omit<EmailEventInput, 'email_id' | 'project_id'>;

/** What one attempt made of a message: its new status, timeline events and suppressions. */
export interface Outcome {
  id: string;
  status: EmailStatus;
  response: string | null;
  size: number;
  events: TimelineEvent[];
  suppress: { email: string; reason: SuppressionReason; detail: string }[];
  retryAt: Date | null;
}

// when only simulator addresses answered, the most severe answer is the message's status
const SEVERITY: EmailStatus[] = ['sent', 'delivered', 'complained', 'deferred', 'bounced'];

export function newOutcome(id: string): Outcome {
  return { id, status: 'sent', response: null, size: 0, events: [], suppress: [], retryAt: null };
}

/** The status one recipient's answer stands for. */
function statusOf(r: RecipientResult): EmailStatus {
  if (r.accepted) return r.complaint ? 'complained' : r.final ? 'delivered' : 'sent';
  return isPermanent(r.responseCode) ? 'bounced' : 'deferred';
}

/**
 * Adds one recipient's answer to the timeline: accepted is `delivered` when the hop was the last
 * (else `sent`), then `complained` if a complaint followed; a refusal is `bounced` (5xx) or
 * `deferred`. A hard bounce suppresses the recipient, unless the simulator answered.
 */
function addAnswer(outcome: Outcome, r: RecipientResult) {
  const simulated = r.simulated ? { simulated: true } : {};
  if (r.accepted) {
    const type = r.final ? 'delivered' : 'sent';
    outcome.events.push({ type, recipient: r.recipient, detail: { response: r.response, ...simulated } });
    if (r.complaint !== undefined)
      outcome.events.push({
        type: 'complained',
        recipient: r.recipient,
        detail: { response: r.complaint, ...simulated },
      });
    return;
  }
  const permanent = isPermanent(r.responseCode);
  outcome.events.push({
    type: permanent ? 'bounced' : 'deferred',
    recipient: r.recipient,
    detail: { response: r.response, ...simulated, ...(permanent ? { bounce_type: 'hard' } : {}) },
  });
  if (permanent && !r.simulated)
    outcome.suppress.push({ email: r.recipient, reason: 'hard_bounce', detail: r.response });
}

/**
 * Applies the transport's answer. Recipients that left the machine decide the status: `delivered`
 * or `sent` when one was accepted, else `bounced`; when the simulator answered every recipient,
 * the most severe of its answers does.
 */
export function applyResult(outcome: Outcome, result: DeliveryResult) {
  for (const r of result.recipients) addAnswer(outcome, r);
  const handedOver = result.recipients.filter((r) => !r.simulated);
  if (handedOver.length === 0 && result.recipients.length > 0) {
    let worst = result.recipients[0];
    for (const r of result.recipients)
      if (SEVERITY.indexOf(statusOf(r)) > SEVERITY.indexOf(statusOf(worst))) worst = r;
    outcome.status = statusOf(worst);
    outcome.response = worst.complaint ?? worst.response;
    return;
  }
  const accepted = handedOver.find((r) => r.accepted);
  outcome.status = accepted ? (accepted.final ? 'delivered' : 'sent') : 'bounced';
  outcome.response = result.response;
}

/**
 * Applies a failed hand-over: a permanent refusal of the recipients or the message bounces (and
 * suppresses) every recipient that was handed over; a permanent refusal of the sender fails the
 * message alone; a temporary failure defers it. What the simulator answered is kept.
 */
export function applyFailure(outcome: Outcome, e: DeliveryError, recipients: string[]) {
  outcome.response = e.response;
  const answered = new Set(e.answered.map((a) => a.recipient));
  if (e.permanent && !e.recipientsAtFault) {
    // the hop refused the sender for good: the message fails; its recipients bounced nothing
    outcome.status = 'failed';
    outcome.events.push({
      type: 'failed',
      recipient: null,
      detail: { reason: 'the next hop refused the sender', response: e.response },
    });
  } else if (e.permanent) {
    outcome.status = 'bounced';
    for (const r of recipients.filter((x) => !answered.has(x))) {
      outcome.events.push({
        type: 'bounced',
        recipient: r,
        detail: { response: e.response, bounce_type: 'hard' },
      });
      outcome.suppress.push({ email: r, reason: 'hard_bounce', detail: e.response });
    }
  } else {
    outcome.status = 'deferred';
    outcome.events.push({ type: 'deferred', recipient: null, detail: { response: e.response } });
  }
  for (const a of e.answered) addAnswer(outcome, a);
}

/**
 * The retry policy: a deferred message gets a job at the next step of POSTHORN_RETRY_SCHEDULE, or
 * becomes `failed` once POSTHORN_RETRY_FOR_HOURS have passed since it was created.
 */
function scheduleRetries(ctx: DomainContext, rows: EmailRow[], outcomes: Outcome[]): JobSpec[] {
  const jobs: JobSpec[] = [];
  for (const o of outcomes) {
    if (o.status !== 'deferred') continue;
    const row = rows.find((r) => r.id === o.id) as EmailRow;
    const retryAt = nextAttemptAt(ctx.config, row.attempts, row.created_at);
    if (!retryAt) {
      o.status = 'failed';
      o.events.push({
        type: 'failed',
        recipient: null,
        detail: {
          reason: `still deferred after ${ctx.config.retryForHours} hours: gave up`,
          response: o.response,
        },
      });
    } else {
      o.retryAt = retryAt;
      jobs.push({
        task: 'deliver_email',
        payload: { ids: [o.id] },
        runAt: retryAt,
        jobKey: deliveryJobKey(o.id),
      });
    }
  }
  return jobs;
}

/**
 * Writes a job's outcomes back in one transaction, set-based: statuses in one `unnest` update, the
 * timeline events (announced to webhooks), the suppressions and the retry jobs.
 */
export async function recordOutcomes(ctx: DomainContext, rows: EmailRow[], outcomes: Outcome[]) {
  const jobs = scheduleRetries(ctx, rows, outcomes);
  const projectOf = (id: string) => (rows.find((r) => r.id === id) as EmailRow).project_id;
  await ctx.db.transaction().execute(async (tx) => {
    await sql`update emails e set status = u.status, last_response = u.response, size_bytes = coalesce(u.size, e.size_bytes),
                     next_attempt_at = u.retry_at, updated_at = now(),
                     sent_at = case when u.status in ('sent', 'delivered', 'complained') then coalesce(e.sent_at, now()) else e.sent_at end
                from unnest(${outcomes.map((o) => o.id)}::uuid[], ${outcomes.map((o) => o.status)}::text[],
                            ${outcomes.map((o) => o.response)}::text[], ${outcomes.map((o) => o.size || null)}::int[],
                            ${outcomes.map((o) => o.retryAt)}::timestamptz[]) as u(id, status, response, size, retry_at)
               where e.id = u.id`.execute(tx);
    await recordEmailEvents(
      tx,
      outcomes.flatMap((o) => {
        // a message with nothing to say per recipient still gets its status on the timeline
        const timeline =
          o.events.length > 0
            ? o.events
            : [{ type: o.status, recipient: null, detail: { response: o.response } }];
        return timeline.map((e) => ({ email_id: o.id, project_id: projectOf(o.id), ...e }));
      }),
    );
    await suppress(
      tx,
      outcomes.flatMap((o) =>
        o.suppress.map((s) => ({ projectId: projectOf(o.id), sourceEmailId: o.id, ...s })),
      ),
    );
    await enqueue(tx, jobs);
  });
  countDeliveries(outcomes.map((o) => o.status));
}
