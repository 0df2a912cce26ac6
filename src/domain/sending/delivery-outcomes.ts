import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import type { Tx } from '../../db/database.ts';
import { deliveryJobKey, deliveryTask, enqueue, type JobSpec, SYSTEM_PRIORITY } from '../../db/enqueue.ts';
import type { EmailStatus, EmailsTable } from '../../db/schema.ts';
import {
  type DeliveryError,
  type DeliveryResult,
  isPermanent,
  type RecipientResult,
} from '../../delivery/transport.ts';
import type { DomainContext } from '../core/context.ts';
import { type EmailEventInput, recordEmailEvents } from '../emails/events.ts';
import { type SuppressionReason, suppress } from '../emails/suppressions.ts';
import { countDeliveries } from '../maintenance/metrics.ts';
import { nextAttemptAt } from './hand-over.ts';

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
  /** The hop's own wait before the next try (a direct route's site schedule), over POSTHORN_RETRY_SCHEDULE's. */
  retryAfterMs?: number;
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
 * `deferred`. A hard bounce suppresses the recipient, unless the simulator answered. An
 * acceptance names the provider's message id when the hop gave one.
 */
function addAnswer(outcome: Outcome, r: RecipientResult, providerMessageId?: string) {
  const simulated = { ...(r.simulated ? { simulated: true } : {}), ...(r.via ? { via: r.via } : {}) };
  if (r.accepted) {
    const type = r.final ? 'delivered' : 'sent';
    // the provider's id for the message, by which its feedback finds the email (domain/feedback)
    const provider = providerMessageId ? { provider_message_id: providerMessageId } : {};
    outcome.events.push({
      type,
      recipient: r.recipient,
      detail: { response: r.response, ...simulated, ...provider },
    });
    if (r.complaint !== undefined)
      outcome.events.push({
        type: 'complained',
        recipient: r.recipient,
        detail: { response: r.complaint, ...simulated },
      });
    return;
  }
  const permanent = isPermanent(r.responseCode);
  const bounceType = r.bounceType ?? 'hard';
  outcome.events.push({
    type: permanent ? 'bounced' : 'deferred',
    recipient: r.recipient,
    detail: { response: r.response, ...simulated, ...(permanent ? { bounce_type: bounceType } : {}) },
  });
  if (permanent && !r.simulated && bounceType === 'hard')
    outcome.suppress.push({ email: r.recipient, reason: 'hard_bounce', detail: r.response });
}

/**
 * Applies the transport's answer. Recipients that left the machine decide the status: `delivered`
 * or `sent` when one was accepted, else `bounced`; when the simulator answered every recipient,
 * the most severe of its answers does.
 */
export function applyResult(outcome: Outcome, result: DeliveryResult) {
  for (const r of result.recipients)
    addAnswer(outcome, r, r.simulated ? undefined : result.providerMessageId);
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
  // a recipient deferred is tried again (only those not answered for good: deliver.ts)
  const deferred = handedOver.find((r) => !r.accepted && !isPermanent(r.responseCode));
  const waits = handedOver.flatMap((r) =>
    !r.accepted && !isPermanent(r.responseCode) && r.retryAfterMs !== undefined ? [r.retryAfterMs] : [],
  );
  if (waits.length > 0) outcome.retryAfterMs = Math.min(...waits);
  outcome.status = deferred ? 'deferred' : accepted ? (accepted.final ? 'delivered' : 'sent') : 'bounced';
  outcome.response = deferred && !accepted ? deferred.response : result.response;
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
 * The retry policy: a deferred message gets a job at the next step of POSTHORN_RETRY_SCHEDULE (or
 * of its site's schedule, when a direct route's site has one), or
 * becomes `failed` once POSTHORN_RETRY_FOR_HOURS have passed since it was created.
 */
function scheduleRetries(
  ctx: Pick<DomainContext, 'config'>,
  rows: EmailRow[],
  outcomes: Outcome[],
): JobSpec[] {
  const jobs: JobSpec[] = [];
  for (const o of outcomes) {
    if (o.status !== 'deferred') continue;
    const row = rows.find((r) => r.id === o.id) as EmailRow;
    const retryAt = nextAttemptAt(ctx.config, row.attempts, row.created_at, o.retryAfterMs);
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
        task: deliveryTask(row.stream),
        payload: { ids: [o.id] },
        runAt: retryAt,
        jobKey: deliveryJobKey(o.id),
        ...(row.stream === 'system' ? { priority: SYSTEM_PRIORITY } : {}),
      });
    }
  }
  return jobs;
}

/**
 * Writes a job's outcomes back in one transaction, set-based: statuses in one `unnest` update, the
 * timeline events (announced to webhooks), the suppressions and the retry jobs.
 */
export async function recordOutcomes(
  ctx: DomainContext,
  rows: EmailRow[],
  outcomes: Outcome[],
  /** More to write in the same transaction (the circuit breaker's counts and trips). */
  also?: (tx: Tx) => Promise<void>,
) {
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
    // the service's own mail may hold a code: its body is not kept once it will not be sent again
    const settled = outcomes.filter((o) => o.status !== 'deferred').map((o) => o.id);
    const system = rows.filter((r) => r.stream === 'system' && settled.includes(r.id)).map((r) => r.id);
    if (system.length > 0)
      await tx
        .updateTable('emails')
        .set({ text_body: null, html: null, body_pruned_at: new Date() })
        .where('id', 'in', system)
        .execute();
    await also?.(tx);
  });
  countDeliveries(outcomes.map((o) => o.status));
}
