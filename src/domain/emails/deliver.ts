import { sql } from 'kysely';
import type { EmailStatus } from '../../db/schema.ts';
import type { ChosenRoute } from '../../delivery/index.ts';
import { deliveryErrorOf } from '../../delivery/transport.ts';
import { addressOf, domainOf } from '../../mail/address.ts';
import { type ComposeInput, composeMessage } from '../../mail/compose.ts';
import type { DkimKey } from '../../mail/dkim.ts';
import { createSigningKeys } from '../sending-domains/dkim-keys.ts';
import {
  applyFailure,
  applyResult,
  type EmailRow,
  newOutcome,
  type Outcome,
  recordOutcomes,
} from './delivery-outcomes.ts';
import { type DeliveryDeps, handOver } from './hand-over.ts';
import { outgoingMessages } from './outgoing.ts';
import { suppressedAmong } from './suppressions.ts';
import { handBack, type Pace, pacesOf } from './throttle.ts';

const CLAIMABLE: EmailStatus[] = ['queued', 'scheduled', 'deferred', 'sending'];

/** A throttled message that found no slot soon: back to the queue until `atMs`. */
type HandedBack = { id: string; atMs: number };

function bareRecipients(row: EmailRow): string[] {
  return [...row.to_addresses, ...row.cc_addresses, ...row.bcc_addresses].map(addressOf);
}

/**
 * Delivers a set of accepted messages by id. Each row is claimed by moving it to `sending`: a
 * message already finished or cancelled is skipped, so a duplicate or retried job is harmless; one
 * caught mid-send by a crash is sent again with the same Message-ID (at-least-once). Results are
 * written back in one transaction, set-based. Returns how many messages were attempted.
 */
export async function deliverEmails(deps: DeliveryDeps, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  // keys are looked up once per call: a rotated key is used from the next job on
  const signingKey = createSigningKeys(deps.ctx);
  const rows = await deps.ctx.db
    .updateTable('emails')
    .set({ status: 'sending', attempts: sql`attempts + 1`, updated_at: new Date() })
    .where('id', 'in', ids)
    .where('status', 'in', CLAIMABLE)
    .returningAll()
    .execute();
  if (rows.length === 0) return 0;
  // throttled marketing and automation rows wait for a slot of their rate when ready to leave
  const paces = await pacesOf(deps.ctx.db, rows);
  const attachments = await attachmentsOf(deps, rows);
  const suppressed = await suppressedByProject(deps, rows);
  // what goes on the wire: rendered again, the marketing layer, the composer's input (rows untouched)
  const outgoing = await outgoingMessages(deps.ctx, rows, attachments);
  const index = new Map(rows.map((row, i) => [row.id, i]));
  // each message goes to its route's transport: the batch is taken route by route
  const results = await Promise.all(
    [...byRoute(deps, rows).values()].flatMap(({ route, rows: routed }) =>
      routed.map(async (row) => {
        const message = outgoing[index.get(row.id) as number];
        if ('refused' in message) return failedToRender(row.id, message.reason);
        return deliverOne(deps, route, row, message.input, {
          key: await signingKey(row.project_id, domainOf(row.from_address)),
          suppressed: suppressed.get(`${row.project_id}:${row.stream}`) as Set<string>,
          pace: paces.get(row.id) ?? null,
        });
      }),
    ),
  );
  const waiting = results.filter((r): r is HandedBack => !('events' in r));
  const outcomes = results.filter((r): r is Outcome => 'events' in r);
  await handBack(deps.ctx.db, waiting);
  await recordOutcomes(deps.ctx, rows, outcomes);
  return outcomes.length;
}

/**
 * The batch's messages grouped by the route the rules chose for each: by its stream, project,
 * sending domain and the domain of its first recipient (To, then Cc, then Bcc).
 */
function byRoute(deps: DeliveryDeps, rows: EmailRow[]) {
  const groups = new Map<string, { route: ChosenRoute; rows: EmailRow[] }>();
  for (const row of rows) {
    const route = deps.routes.choose({
      stream: row.stream,
      projectId: row.project_id,
      fromDomain: domainOf(addressOf(row.from_address)).toLowerCase(),
      recipientDomain: domainOf(bareRecipients(row)[0] ?? '').toLowerCase(),
    });
    const group = groups.get(route.name) ?? { route, rows: [] };
    group.rows.push(row);
    groups.set(route.name, group);
  }
  return groups;
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
 * unsubscribe blocks marketing and automation only, so one batch may hold both answers.
 */
async function suppressedByProject(deps: DeliveryDeps, rows: EmailRow[]) {
  const suppressed = new Map<string, Set<string>>();
  for (const group of new Set(rows.map((r) => `${r.project_id}:${r.stream}`))) {
    const mine = rows.filter((r) => `${r.project_id}:${r.stream}` === group);
    suppressed.set(
      group,
      await suppressedAmong(deps.ctx.db, mine[0].project_id, mine.flatMap(bareRecipients), mine[0].stream),
    );
  }
  return suppressed;
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
  route: ChosenRoute,
  row: EmailRow,
  input: ComposeInput,
  extra: { key: DkimKey; suppressed: Set<string>; pace: Pace },
): Promise<Outcome | HandedBack> {
  const outcome = newOutcome(row.id);
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

  let raw: Buffer = Buffer.alloc(0);
  const compose = async () => {
    raw = await composeMessage(input, extra.key);
    outcome.size = raw.length;
  };
  const send = async () => {
    try {
      const result = await handOver(deps, route, {
        id: row.id,
        key: extra.key,
        to: recipients,
        raw,
        messageId: row.message_id,
        attempt: row.attempts,
      });
      applyResult(outcome, result);
    } catch (err) {
      applyFailure(outcome, deliveryErrorOf(err), recipients);
    }
  };
  // a throttled message is composed, waits for its slot and is handed over in its turn (or goes
  // back to the queue when no slot is free soon); any other leaves at once
  if (extra.pace) {
    const slot = await extra.pace(compose, send);
    if (!slot.leave) return { id: row.id, atMs: slot.atMs };
  } else {
    await compose();
    await send();
  }
  return outcome;
}
