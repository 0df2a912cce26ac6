import type { ChosenRoute } from '../../delivery/index.ts';
import { deliveryErrorOf } from '../../delivery/transport.ts';
import { addressOf, domainOf } from '../../mail/address.ts';
import { type ComposeInput, composeMessage } from '../../mail/compose.ts';
import type { DkimKey } from '../../mail/dkim.ts';
import { suppressedAmong } from '../emails/suppressions.ts';
import { createSigningKeys } from '../sending-domains/dkim-keys.ts';
import type { Tally } from '../shaping/breaker.ts';
import { type BatchLimits, limitsOf } from '../shaping/limits.ts';
import { handBack } from '../shaping/throttle.ts';
import {
  applyFailure,
  applyResult,
  type EmailRow,
  newOutcome,
  type Outcome,
  recordOutcomes,
} from './delivery-outcomes.ts';
import { type DeliveryDeps, handOver, providerTagsOf } from './hand-over.ts';
import { outgoingMessages } from './outgoing.ts';
import type { BatchProgress } from './scheduler.ts';

/**
 * A message back to the queue until `atMs`, not tried: a throttle with no slot soon, or a site
 * holding its mail (`held`: recorded on the timeline with the site's answer).
 */
type HandedBack = { id: string; atMs: number; bulk: boolean; held?: { projectId: string; response: string } };

/** How long the first answer of a batch waits for others to be written with it (one transaction). */
const RECORD_LINGER_MS = 300;

function bareRecipients(row: EmailRow): string[] {
  return [...row.to_addresses, ...row.cc_addresses, ...row.bcc_addresses].map(addressOf);
}

/**
 * Delivers messages a scheduler claimed (claim.ts moved them to `sending`), in stages: plan (each
 * message's routes, pace, suppressions, what earlier attempts settled, the breaker's view), render
 * (again, with the marketing layer), send (compose, sign, hand over), record. Each message's answer
 * is recorded as it comes, with the answers that came meanwhile (one transaction, set-based), so a
 * message to a slow site never holds back the record of the others. Returns how many messages
 * were answered (the others went back to the queue for their pace or their site's hold).
 */
export async function deliverClaimed(
  deps: DeliveryDeps,
  rows: EmailRow[],
  progress: BatchProgress = { session: () => {} },
): Promise<number> {
  if (rows.length === 0) return 0;
  // keys are looked up once per batch: a rotated key is used from the next batch on
  const signingKey = createSigningKeys(deps.ctx);
  // each message goes to the routes its rule names, the healthy first (chosen once per message)
  const routes = new Map(rows.map((row) => [row.id, routesOf(deps, row)]));
  // every limit of the batch (throttles, route rates, the breaker's stops, warm-up): shaping/limits.ts
  // read at once (each its own statement): a batch's plan waits for one round trip, not three
  const [limits, attachments, suppressed] = await Promise.all([
    limitsOf(deps.ctx, rows, (row) => (routes.get(row.id) as ChosenRoute[])[0]),
    attachmentsOf(deps, rows),
    suppressedByProject(deps, rows),
  ]);
  const settled = await settledOf(deps, rows, (row) =>
    bareRecipients(row).some((r) =>
      (suppressed.get(`${row.project_id}:${row.stream}`) as Set<string>).has(r.toLowerCase()),
    ),
  );
  // what goes on the wire: rendered again, the marketing layer, the composer's input (rows untouched)
  const outgoing = await outgoingMessages(deps.ctx, rows, attachments, 'background');
  const answers = rows.map(async (row, i): Promise<Outcome | HandedBack> => {
    const message = outgoing[i];
    if ('refused' in message) return failedToRender(row.id, message.reason);
    try {
      return await deliverOne(deps, routes.get(row.id) as ChosenRoute[], row, message.input, {
        key: await signingKey(row.project_id, domainOf(row.from_address)),
        suppressed: suppressed.get(`${row.project_id}:${row.stream}`) as Set<string>,
        settled: settled.get(row.id),
        limits,
        onSession: () => progress.session(row.id),
      });
    } catch (err) {
      // a failure of ours before the hand-over (a key that cannot be read): tried again later
      return unexpectedFailure(row.id, err);
    }
  });
  let answered = 0;
  for await (const results of asTheyCome(answers, RECORD_LINGER_MS)) {
    answered += await record(deps, rows, results, limits);
    progress.recorded?.(results.map((r) => r.id));
  }
  return answered;
}

/**
 * The settled values of `promises` in groups, as they come: a group is what settled from the first
 * one's arrival until `lingerMs` later (or until every promise settled, if sooner). None rejects.
 */
export async function* asTheyCome<T>(promises: Promise<T>[], lingerMs: number): AsyncGenerator<T[]> {
  const ready: T[] = [];
  let left = promises.length;
  let wake: (() => void) | null = null;
  const allDone = Promise.all(promises).then(() => undefined);
  for (const p of promises)
    void p.then((value) => {
      ready.push(value);
      left--;
      wake?.();
    });
  let taken = 0;
  while (taken < promises.length) {
    if (ready.length === 0) await new Promise<void>((resolve) => (wake = resolve));
    wake = null;
    if (left > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([allDone, new Promise((resolve) => (timer = setTimeout(resolve, lingerMs)))]);
      clearTimeout(timer);
    }
    const group = ready.splice(0);
    taken += group.length;
    yield group;
  }
}

/**
 * Writes one group of a batch's answers in one transaction: statuses, events, suppressions, retries,
 * the breaker's counts and trips met so far, the warm-up's use; messages that found no slot (or a
 * held site) go back to the queue. Returns how many were answered.
 */
async function record(
  deps: DeliveryDeps,
  rows: EmailRow[],
  results: (Outcome | HandedBack)[],
  limits: BatchLimits,
): Promise<number> {
  const waiting = results.filter((r): r is HandedBack => !('events' in r));
  const outcomes = results.filter((r): r is Outcome => 'events' in r);
  await handBack(deps.ctx.db, waiting);
  if (outcomes.length === 0) return 0;
  const taken = new Set(outcomes.filter((o) => TAKEN.has(o.status)).map((o) => o.id));
  const counted = await limits.written(rows.filter((r) => taken.has(r.id)));
  try {
    await recordOutcomes(deps.ctx, rows, outcomes, counted.write);
  } catch (err) {
    counted.failed();
    throw err;
  }
  counted.ok();
  return outcomes.length;
}

/** A message our own code failed before it was handed over: deferred, tried again on the schedule. */
function unexpectedFailure(id: string, err: unknown): Outcome {
  const response = `451 4.3.0 Posthorn could not send the message this time: ${(err as Error).message}`;
  return {
    ...newOutcome(id),
    status: 'deferred',
    response,
    events: [{ type: 'deferred', recipient: null, detail: { response } }],
  };
}

/**
 * The routes a message may leave by, in order: those of the rule that fits its stream, project,
 * sending domain and the domain of its first recipient (To, then Cc, then Bcc), the healthy first.
 */
function routesOf(deps: DeliveryDeps, row: EmailRow): ChosenRoute[] {
  // the rules see the service's own mail as transactional mail of no project
  const { stream } = row;
  return deps.routes.choose({
    stream: stream === 'system' ? 'transactional' : stream,
    projectId: stream === 'system' ? null : row.project_id,
    fromDomain: domainOf(addressOf(row.from_address)).toLowerCase(),
    recipientDomain: domainOf(bareRecipients(row)[0] ?? '').toLowerCase(),
  });
}

async function attachmentsOf(deps: DeliveryDeps, rows: EmailRow[]) {
  const withAttachments = rows.filter((r) => r.attachments.length > 0).map((r) => r.id);
  if (withAttachments.length === 0) return [];
  return deps.ctx.db
    .selectFrom('email_attachments')
    .selectAll()
    .where('email_id', 'in', withAttachments)
    .orderBy('position')
    .execute();
}

/**
 * The suppressed addresses among the rows' recipients, per project and stream (lower-cased): an
 * unsubscribe blocks marketing and automation only, so one batch may hold both answers. Nothing is
 * suppressed for the service's own mail: a person asking for a code gets it.
 */
async function suppressedByProject(deps: DeliveryDeps, rows: EmailRow[]) {
  const suppressed = new Map<string, Set<string>>();
  for (const group of new Set(rows.map((r) => `${r.project_id}:${r.stream}`))) {
    const mine = rows.filter((r) => `${r.project_id}:${r.stream}` === group);
    // the service's own mail (a code asked for now) is sent whatever earlier mail met
    if (mine[0].stream === 'system') {
      suppressed.set(group, new Set());
      continue;
    }
    suppressed.set(
      group,
      await suppressedAmong(deps.ctx.db, mine[0].project_id, mine.flatMap(bareRecipients), mine[0].stream),
    );
  }
  return suppressed;
}

/** The statuses of a message the next hop took (what a warm-up's day counts). */
const TAKEN = new Set<string>(['sent', 'delivered', 'complained']);

/** A message the breaker held goes back to the queue for this long: the breaker reads again every 5 s (a resume). */
const BREAKER_HOLD_MS = 5_000;

/** What one message met, for the circuit breaker: taken, hard-bounced, complained. */
function tallyOf(outcome: Outcome): Tally {
  const t = { sent: 0, bounced: 0, complained: 0 };
  for (const e of outcome.events) {
    if (e.type === 'delivered' || e.type === 'sent') t.sent++;
    else if (e.type === 'complained') t.complained++;
    else if (e.type === 'bounced' && (e.detail as { bounce_type?: string }).bounce_type === 'hard')
      t.bounced++;
  }
  return t;
}

/** What earlier attempts settled for good: recipients accepted or bounced, and the best acceptance. */
interface Settled {
  recipients: Set<string>;
  accepted: 'delivered' | 'sent' | null;
}

/**
 * For messages tried before: the recipients an earlier attempt settled (accepted, bounced), read
 * from their events, so a retry goes only to those still deferred (a direct route answers per
 * domain; a relay may defer one recipient and take the others).
 */
async function settledOf(
  deps: DeliveryDeps,
  rows: EmailRow[],
  /** A first attempt read too: it has a suppressed recipient, perhaps recorded when it was accepted. */
  hasSuppressed: (row: EmailRow) => boolean,
): Promise<Map<string, Settled>> {
  const settled = new Map<string, Settled>();
  const retried = rows.filter((r) => r.attempts > 1 || hasSuppressed(r)).map((r) => r.id);
  if (retried.length === 0) return settled;
  const events = await deps.ctx.db
    .selectFrom('email_events')
    .select(['email_id', 'recipient', 'type'])
    .where('email_id', 'in', retried)
    .where('type', 'in', ['delivered', 'sent', 'bounced', 'complained', 'suppressed'])
    .where('recipient', 'is not', null)
    .execute();
  for (const e of events) {
    const entry = settled.get(e.email_id) ?? { recipients: new Set<string>(), accepted: null };
    settled.set(e.email_id, entry);
    // a suppressed recipient is recorded once: a retry leaves it out without a second event
    entry.recipients.add((e.recipient as string).toLowerCase());
    if (e.type === 'delivered' || e.type === 'complained') entry.accepted = 'delivered';
    else if (e.type === 'sent' && entry.accepted === null) entry.accepted = 'sent';
  }
  return settled;
}

/** A message that cannot be rendered again (or cannot carry the marketing layer) is failed with the reason. */
function failedToRender(id: string, reason: string): Outcome {
  return {
    ...newOutcome(id),
    status: 'failed',
    response: reason,
    events: [{ type: 'failed', recipient: null, detail: { reason } }],
  };
}

/** One message: suppressed recipients are left out, the rest handed over, the answer recorded. */
async function deliverOne(
  deps: DeliveryDeps,
  routes: ChosenRoute[],
  row: EmailRow,
  input: ComposeInput,
  extra: {
    key: DkimKey;
    suppressed: Set<string>;
    settled: Settled | undefined;
    /** The batch's limits (shaping/limits.ts): the row's pace and the breaker's stops. */
    limits: BatchLimits;
    onSession: () => void;
  },
): Promise<Outcome | HandedBack> {
  const outcome = newOutcome(row.id);
  const settled = extra.settled;
  const recipients = bareRecipients(row).filter((r) => {
    if (settled?.recipients.has(r.toLowerCase())) return false;
    if (!extra.suppressed.has(r.toLowerCase())) return true;
    outcome.events.push({
      type: 'suppressed',
      recipient: r,
      detail: { reason: 'recipient is on the suppression list' },
    });
    return false;
  });
  if (recipients.length === 0)
    return settled?.accepted
      ? { ...outcome, status: settled.accepted, response: 'every recipient was answered before' }
      : { ...outcome, status: 'suppressed', response: 'every recipient is suppressed' };

  let raw: Buffer = Buffer.alloc(0);
  const compose = async () => {
    raw = await composeMessage(input, extra.key);
    outcome.size = raw.length;
  };
  // every recipient held by the route before anything was sent (a site that asked to slow down)
  let heldUntil: number | null = null;
  let heldBySite: string | null = null;
  const send = async () => {
    // what the circuit breaker stopped (its campaign, flow, domain or project) hands nothing more
    // over, from the moment it tripped: asked at the hand-over, after the compose and any wait
    const stopped = extra.limits.stopped(row);
    if (stopped) {
      heldUntil = Date.now() + BREAKER_HOLD_MS;
      // what it becomes if it is not handed back (past POSTHORN_RETRY_FOR_HOURS): deferred, so the
      // retry policy fails it, never recorded as sent
      const response = `held: its ${stopped.scope} is paused by the circuit breaker`;
      Object.assign(outcome, { status: 'deferred', response });
      outcome.events.push({ type: 'deferred', recipient: null, detail: { response } });
      return;
    }
    try {
      const result = await handOver(deps, routes, {
        id: row.id,
        key: extra.key,
        to: recipients,
        raw,
        messageId: row.message_id,
        attempt: row.attempts,
        tags: providerTagsOf(row),
        onSession: extra.onSession,
        claimant: {
          urgency: row.stream === 'system' || row.stream === 'transactional' ? row.stream : 'bulk',
          project: row.project_id,
        },
      });
      const held = result.recipients.map((r) => r.heldUntil);
      if (held.length > 0 && held.every((at) => at !== undefined)) {
        heldUntil = Math.max(...held);
        heldBySite = result.recipients.find((r) => r.heldBy === 'site')?.response ?? null;
      }
      applyResult(outcome, result);
      extra.limits.observe(row, tallyOf(outcome));
    } catch (err) {
      applyFailure(outcome, deliveryErrorOf(err), recipients);
    }
  };
  // a throttled message is composed, waits for its slot and is handed over in its turn (or goes
  // back to the queue when no slot is free soon); any other leaves at once
  const pace = extra.limits.pace(row);
  if (pace) {
    const slot = await pace(compose, send);
    if (!slot.leave) return { id: row.id, atMs: slot.atMs, bulk: row.stream !== 'transactional' };
  } else {
    await compose();
    await send();
  }
  // held, not tried: back to the queue for when the site takes mail again, the attempt not
  // counted (within POSTHORN_RETRY_FOR_HOURS: a site that never takes it lets it expire)
  if (heldUntil !== null && heldUntil - row.created_at.getTime() < deps.ctx.config.retryForHours * 3_600_000)
    return {
      id: row.id,
      atMs: heldUntil,
      bulk: row.stream !== 'transactional',
      ...(heldBySite ? { held: { projectId: row.project_id, response: heldBySite } } : {}),
    };
  // recipients an earlier attempt delivered keep the message delivered when the rest bounce now
  if (settled?.accepted && (outcome.status === 'bounced' || outcome.status === 'failed'))
    outcome.status = settled.accepted;
  return outcome;
}
