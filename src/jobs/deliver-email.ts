import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { EmailStatus, EmailsTable } from '../db/schema.ts';
import { DeliveryError, type DeliveryResult, type Transport } from '../delivery/transport.ts';
import type { DomainContext } from '../domain/context.ts';
import { createSigningKeys } from '../domain/dkim-keys.ts';
import { type SuppressionReason, suppress, suppressedAmong } from '../domain/suppressions.ts';
import { announceEmailEvents } from '../domain/webhooks/dispatch.ts';
import { addressOf } from '../mail/address.ts';
import { composeMessage } from '../mail/compose.ts';
import type { DkimKey } from '../mail/dkim.ts';
import {
  isSimulated,
  SIMULATED_REPLIES,
  type SimulatedOutcome,
  simulatedOutcome,
} from '../mail/simulator.ts';
import { bounceAddress } from '../mail/verp.ts';
import { enqueue, type JobSpec } from './enqueue.ts';

type EmailRow = Selectable<EmailsTable>;

export interface DeliveryDeps {
  ctx: DomainContext;
  transport: Transport;
  log: Logger;
}

interface Outcome {
  id: string;
  status: EmailStatus;
  response: string | null;
  size: number;
  events: { type: string; recipient: string | null; detail: Record<string, unknown> }[];
  suppress: { email: string; reason: SuppressionReason; detail: string }[];
  retryAt: Date | null;
}

const CLAIMABLE: EmailStatus[] = ['queued', 'scheduled', 'deferred', 'sending'];
const SEVERITY: SimulatedOutcome[] = ['delivered', 'complained', 'deferred', 'bounced'];

function domainOf(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1);
}

function bareRecipients(row: EmailRow): string[] {
  return [...row.to_addresses, ...row.cc_addresses, ...row.bcc_addresses].map(addressOf);
}

/**
 * The one way a signed message leaves Posthorn (project mail and the service's own): handed to the
 * transport with the VERP return path that names it, on the signing domain's bounce subdomain (or
 * the shared domain), so the return path aligns with d= and a bounce finds its way back to the MX.
 */
export function handOver(
  deps: { ctx: DomainContext; transport: Transport },
  message: { id: string; key: DkimKey; to: string[]; raw: Buffer; messageId: string },
): Promise<DeliveryResult> {
  const { sharedDomain } = deps.ctx.config;
  const domain = message.key.domain === sharedDomain ? sharedDomain : `bounces.${message.key.domain}`;
  return deps.transport.send({
    from: bounceAddress(deps.ctx.secrets.hash, message.id, domain),
    to: message.to,
    raw: message.raw,
    messageId: message.messageId,
  });
}

/**
 * When a deferred message is tried next: the retry schedule's step for the attempt just made (the
 * last step repeats), or null when that would pass POSTHORN_RETRY_FOR_HOURS since it was created.
 */
export function nextAttemptAt(
  config: Pick<Config, 'retrySchedule' | 'retryForHours'>,
  attempts: number,
  createdAt: Date,
): Date | null {
  const { retrySchedule, retryForHours } = config;
  const at = Date.now() + retrySchedule[Math.min(attempts - 1, retrySchedule.length - 1)] * 1000;
  return at - createdAt.getTime() > retryForHours * 3_600_000 ? null : new Date(at);
}

/**
 * Delivers a set of accepted messages (the job payload holds their ids only). Each row is claimed by
 * moving it to `sending`: a message already finished or cancelled is skipped, so a duplicate or
 * retried job is harmless; one caught mid-send by a crash is sent again with the same Message-ID
 * (at-least-once). Results are written back in one transaction, set-based.
 */
export function deliverEmailTask(deps: DeliveryDeps) {
  return async (payload: unknown) => {
    // keys are looked up once per job: a rotated key is used from the next job on
    const signingKey = createSigningKeys(deps.ctx);
    const ids = (payload as { ids?: string[] }).ids ?? [];
    if (ids.length === 0) return;
    const { ctx } = deps;
    const rows = await ctx.db
      .updateTable('emails')
      .set({ status: 'sending', attempts: sql`attempts + 1`, updated_at: new Date() })
      .where('id', 'in', ids)
      .where('status', 'in', CLAIMABLE)
      .returningAll()
      .execute();
    if (rows.length === 0) return;
    const attachmentRows = rows.some((r) => r.attachments.length > 0)
      ? await ctx.db
          .selectFrom('email_attachments')
          .selectAll()
          .where(
            'email_id',
            'in',
            rows.filter((r) => r.attachments.length > 0).map((r) => r.id),
          )
          .orderBy('position')
          .execute()
      : [];
    const suppressed = new Map<string, Set<string>>();
    for (const projectId of new Set(rows.map((r) => r.project_id))) {
      const mine = rows.filter((r) => r.project_id === projectId);
      suppressed.set(
        projectId,
        await suppressedAmong(ctx.db, projectId, mine.flatMap(bareRecipients), mine[0].stream),
      );
    }
    const outcomes = await Promise.all(
      rows.map(async (row) =>
        deliverOne(deps, row, {
          key: await signingKey(row.project_id, domainOf(row.from_address)),
          attachments: attachmentRows.filter((a) => a.email_id === row.id),
          suppressed: suppressed.get(row.project_id) as Set<string>,
        }),
      ),
    );
    await recordOutcomes(deps, rows, outcomes);
  };
}

async function deliverOne(
  deps: DeliveryDeps,
  row: EmailRow,
  extra: { key: DkimKey; attachments: { position: number; content: Buffer }[]; suppressed: Set<string> },
): Promise<Outcome> {
  const outcome: Outcome = {
    id: row.id,
    status: 'sent',
    response: null,
    size: 0,
    events: [],
    suppress: [],
    retryAt: null,
  };
  const recipients = bareRecipients(row).filter((r) => {
    if (!extra.suppressed.has(r.toLowerCase())) return true;
    outcome.events.push({
      type: 'suppressed',
      recipient: r,
      detail: { reason: 'recipient is on the suppression list' },
    });
    return false;
  });
  if (recipients.length === 0)
    return { ...outcome, status: 'suppressed', response: 'every recipient is suppressed' };

  const raw = await composeMessage(
    {
      messageId: row.message_id,
      from: row.from_header,
      to: row.to_addresses,
      cc: row.cc_addresses,
      replyTo: row.reply_to,
      subject: row.subject,
      html: row.html,
      text: row.text_body,
      headers: row.headers,
      attachments: row.attachments.map((a, i) => ({
        filename: a.filename,
        contentType: a.content_type,
        contentId: a.content_id,
        content: extra.attachments.find((x) => x.position === i)?.content ?? Buffer.alloc(0),
      })),
      projectId: row.project_id,
      stream: row.stream,
    },
    extra.key,
  );
  outcome.size = raw.length;

  const simulated = recipients.filter(isSimulated);
  const real = recipients.filter((r) => !isSimulated(r));
  if (real.length > 0) {
    try {
      const result = await handOver(deps, {
        id: row.id,
        key: extra.key,
        to: real,
        raw,
        messageId: row.message_id,
      });
      outcome.response = result.response;
      const finalStatus: EmailStatus = deps.transport.name === 'mailbox' ? 'delivered' : 'sent';
      for (const r of result.accepted)
        outcome.events.push({ type: finalStatus, recipient: r, detail: { response: result.response } });
      for (const e of result.rejectedErrors ?? []) {
        const permanent = (e.responseCode ?? 0) >= 500;
        outcome.events.push({
          type: permanent ? 'bounced' : 'deferred',
          recipient: e.recipient,
          detail: { response: e.response, bounce_type: permanent ? 'hard' : undefined },
        });
        if (permanent)
          outcome.suppress.push({ email: e.recipient, reason: 'hard_bounce', detail: e.response });
      }
      outcome.status = result.accepted.length > 0 ? finalStatus : 'bounced';
    } catch (err) {
      const e =
        err instanceof DeliveryError ? err : new DeliveryError((err as Error).message, { permanent: false });
      outcome.response = e.response;
      if (e.permanent) {
        outcome.status = 'bounced';
        for (const r of real) {
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
    }
  }
  if (simulated.length > 0) {
    let worst: SimulatedOutcome = 'delivered';
    for (const r of simulated) {
      let result = simulatedOutcome(r);
      if (result === 'deferred' && row.attempts > 1) result = 'delivered'; // a temporary failure, once
      if (SEVERITY.indexOf(result) > SEVERITY.indexOf(worst)) worst = result;
      const detail = { response: SIMULATED_REPLIES[result], simulated: true };
      if (result === 'complained') {
        outcome.events.push({
          type: 'delivered',
          recipient: r,
          detail: { response: SIMULATED_REPLIES.delivered, simulated: true },
        });
      }
      outcome.events.push({
        type: result,
        recipient: r,
        detail: result === 'bounced' ? { ...detail, bounce_type: 'hard' } : detail,
      });
    }
    if (real.length === 0) {
      outcome.status = worst;
      outcome.response = SIMULATED_REPLIES[worst];
    }
  }
  return outcome;
}

async function recordOutcomes(deps: DeliveryDeps, rows: EmailRow[], outcomes: Outcome[]) {
  const { ctx } = deps;
  const { retryForHours } = ctx.config;
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
        detail: { reason: `still deferred after ${retryForHours} hours: gave up`, response: o.response },
      });
    } else {
      o.retryAt = retryAt;
      jobs.push({
        task: 'deliver_email',
        payload: { ids: [o.id] },
        runAt: o.retryAt,
        jobKey: `email:${o.id}`,
      });
    }
  }
  await ctx.db.transaction().execute(async (tx) => {
    await sql`update emails e set status = u.status, last_response = u.response, size_bytes = coalesce(u.size, e.size_bytes),
                     next_attempt_at = u.retry_at, updated_at = now(),
                     sent_at = case when u.status in ('sent', 'delivered', 'complained') then coalesce(e.sent_at, now()) else e.sent_at end
                from unnest(${outcomes.map((o) => o.id)}::uuid[], ${outcomes.map((o) => o.status)}::text[],
                            ${outcomes.map((o) => o.response)}::text[], ${outcomes.map((o) => o.size || null)}::int[],
                            ${outcomes.map((o) => o.retryAt)}::timestamptz[]) as u(id, status, response, size, retry_at)
               where e.id = u.id`.execute(tx);
    const events = outcomes.flatMap((o) => {
      const row = rows.find((r) => r.id === o.id) as EmailRow;
      const timeline =
        o.events.length > 0
          ? o.events
          : [{ type: o.status, recipient: null, detail: { response: o.response } }];
      return timeline.map((e) => ({
        email_id: o.id,
        project_id: row.project_id,
        type: e.type,
        recipient: e.recipient,
        detail: JSON.stringify(e.detail),
      }));
    });
    if (events.length > 0) {
      const written = await tx
        .insertInto('email_events')
        .values(events)
        .returning(['id', 'project_id', 'type'])
        .execute();
      await announceEmailEvents(
        tx,
        written.map((w) => ({ ...w, id: Number(w.id) })),
      );
    }
    await suppress(
      tx,
      outcomes.flatMap((o) => {
        const row = rows.find((r) => r.id === o.id) as EmailRow;
        return o.suppress.map((s) => ({
          projectId: row.project_id,
          email: s.email,
          reason: s.reason,
          sourceEmailId: o.id,
          detail: s.detail,
        }));
      }),
    );
    await enqueue(tx, jobs);
  });
  deps.log.debug({ emails: outcomes.length }, 'delivery batch done');
}
