import { createHash, randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Tx } from '../../db/database.ts';
import type { EmailStatus } from '../../db/schema.ts';
import { enqueue, type JobSpec } from '../../jobs/enqueue.ts';
import { formatMailbox } from '../../mail/address.ts';
import type { DomainContext } from '../context.ts';
import { ConflictError, SendRefusedError, ValidationError } from '../errors.ts';
import { type ProjectFacts, type Stream, sendBlockers, sharedDefaultFrom } from '../status.ts';
import { suppressedAmong } from '../suppressions.ts';
import { checkSendingLimits, countSent } from '../usage.ts';
import { type EmailInput, type ValidEmail, validateEmail } from './validate.ts';

/** Who sends: the project (with its facts, read at authentication), the key, and the stream. */
export interface Sender {
  facts: ProjectFacts;
  apiKeyId: string | null;
  stream: Stream;
}

export interface AcceptedEmail {
  id: string;
  object: 'email';
  status: string;
  warnings?: string[];
}

export interface Idempotency {
  key: string;
  /** Identifies the request: same key with another request is a conflict. */
  requestHash: Buffer;
}

export const JOB_CHUNK = 50;

export function requestHash(path: string, body: unknown): Buffer {
  return createHash('sha256').update(path).update('\n').update(JSON.stringify(body)).digest();
}

function domainOf(address: string) {
  return address.slice(address.lastIndexOf('@') + 1);
}

/** The send checks every path shares: account, `from` domain; returns how many use the shared domain. */
export function checkSenders(
  ctx: DomainContext,
  sender: Sender,
  messages: ValidEmail[],
  label: (i: number) => string,
): number {
  const blockers = sendBlockers(sender.facts, sender.stream);
  if (blockers.length > 0) {
    throw new SendRefusedError(
      blockers[0].code,
      `Sending is not possible yet: ${blockers.map((b) => b.message).join('; ')}`,
    );
  }
  const shared = sharedDefaultFrom(ctx);
  let onShared = 0;
  messages.forEach((m, i) => {
    if (m.from.address === shared) {
      onShared++;
      return;
    }
    const domain = domainOf(m.from.address);
    if (!sender.facts.verified_domains.includes(domain)) {
      throw new SendRefusedError(
        'unverified_domain',
        `${label(i)}\`from\` ${m.from.address} is not on a verified domain of this project: ${
          sender.facts.verified_domains.length
            ? `verified domains are ${sender.facts.verified_domains.join(', ')}`
            : 'this project has no verified domain yet'
        }. Verify ${domain} with POST /v1/domains, or send from ${shared}`,
      );
    }
  });
  return onShared;
}

/**
 * Accepts messages for delivery: validates every one (a batch is refused whole, naming the first bad
 * message), runs the send checks, then commits the rows, their events, usage and delivery jobs in one
 * transaction before answering. Suppressed recipients are dropped; a message with none left is stored
 * as `suppressed`.
 */
export async function acceptEmails(
  ctx: DomainContext,
  sender: Sender,
  inputs: EmailInput[],
  opts: { batch: boolean; idempotency?: Idempotency },
): Promise<AcceptedEmail[] | { replay: unknown }> {
  const label = (i: number) => (opts.batch ? `Message ${i}: ` : '');
  const now = new Date();
  const messages = inputs.map((input, i) => {
    try {
      return validateEmail(input, now);
    } catch (err) {
      if (err instanceof ValidationError && opts.batch)
        throw new ValidationError(`${label(i)}${err.message}`);
      throw err;
    }
  });
  const onShared = checkSenders(ctx, sender, messages, label);
  await checkSendingLimits(ctx, sender.facts, messages.length, onShared);
  const projectId = sender.facts.id;
  const allRecipients = messages.flatMap((m) => [...m.to, ...m.cc, ...m.bcc].map((r) => r.address));
  const suppressed = await suppressedAmong(ctx.db, projectId, allRecipients, sender.stream);

  if (opts.idempotency) {
    await ctx.db
      .deleteFrom('idempotency_keys')
      .where('project_id', '=', projectId)
      .where('key', '=', opts.idempotency.key)
      .where('created_at', '<', new Date(Date.now() - 86_400_000))
      .execute();
  }

  return ctx.db.transaction().execute(async (tx) => {
    if (opts.idempotency) {
      const replay = await claimIdempotencyKey(tx, projectId, opts.idempotency);
      if (replay) return replay;
    }
    const results: AcceptedEmail[] = [];
    const jobs: JobSpec[] = [];
    const immediate: string[] = [];
    const rows = messages.map((m) => {
      const id = randomUUID();
      const recipients = [...m.to, ...m.cc, ...m.bcc].map((r) => r.address);
      const blocked = recipients.filter((r) => suppressed.has(r.toLowerCase()));
      const status: EmailStatus =
        blocked.length === recipients.length ? 'suppressed' : m.scheduledAt ? 'scheduled' : 'queued';
      if (status === 'scheduled')
        jobs.push({
          task: 'deliver_email',
          payload: { ids: [id] },
          runAt: m.scheduledAt,
          jobKey: `email:${id}`,
        });
      if (status === 'queued') immediate.push(id);
      results.push({ id, object: 'email', status, ...(m.warnings.length ? { warnings: m.warnings } : {}) });
      return { id, m, status, blocked };
    });
    for (let i = 0; i < immediate.length; i += JOB_CHUNK) {
      jobs.push({ task: 'deliver_email', payload: { ids: immediate.slice(i, i + JOB_CHUNK) } });
    }

    await tx
      .insertInto('emails')
      .values(
        rows.map(({ id, m, status }) => ({
          id,
          project_id: projectId,
          api_key_id: sender.apiKeyId,
          stream: sender.stream,
          status,
          message_id: `<${id}@${domainOf(m.from.address)}>`,
          from_header: formatMailbox(m.from),
          from_address: m.from.address,
          to_addresses: m.to.map(formatMailbox),
          cc_addresses: m.cc.map(formatMailbox),
          bcc_addresses: m.bcc.map(formatMailbox),
          reply_to: m.replyTo.map(formatMailbox),
          subject: m.subject,
          html: m.html,
          text_body: m.text,
          headers: JSON.stringify(m.headers),
          tags: JSON.stringify(m.tags),
          attachments: JSON.stringify(
            m.attachments.map((a) => ({
              filename: a.filename,
              content_type: a.contentType,
              content_id: a.contentId,
              size: a.content.length,
            })),
          ),
          scheduled_at: m.scheduledAt,
          size_bytes: m.sizeEstimate,
        })),
      )
      .execute();
    const attachments = rows.flatMap(({ id, m }) =>
      m.attachments.map((a, position) => ({ email_id: id, position, content: a.content })),
    );
    if (attachments.length > 0) await tx.insertInto('email_attachments').values(attachments).execute();
    await tx
      .insertInto('email_events')
      .values(
        rows.flatMap(({ id, status, blocked, m }) => [
          {
            email_id: id,
            project_id: projectId,
            type: status,
            recipient: null,
            detail: JSON.stringify(m.scheduledAt ? { scheduled_at: m.scheduledAt } : {}),
          },
          ...(status === 'suppressed'
            ? []
            : blocked.map((r) => ({
                email_id: id,
                project_id: projectId,
                type: 'suppressed',
                recipient: r,
                detail: '{"reason":"recipient is on the suppression list"}',
              }))),
        ]),
      )
      .execute();
    const sending = rows.filter((r) => r.status !== 'suppressed');
    if (sending.length > 0) {
      const sharedFrom = sharedDefaultFrom(ctx);
      await countSent(
        tx,
        projectId,
        sending.length,
        sending.filter((r) => r.m.from.address === sharedFrom).length,
      );
    }
    await enqueue(tx, jobs);
    if (opts.idempotency) {
      const response = opts.batch ? { data: results } : results[0];
      await tx
        .updateTable('idempotency_keys')
        .set({ status_code: 200, response: JSON.stringify(response) })
        .where('project_id', '=', projectId)
        .where('key', '=', opts.idempotency.key)
        .execute();
    }
    return results;
  });
}

/**
 * Takes the idempotency key for this request. A concurrent request with the same key waits on the
 * unique index until the first commits, then replays its response.
 */
async function claimIdempotencyKey(
  tx: Tx,
  projectId: string,
  idem: Idempotency,
): Promise<{ replay: unknown } | null> {
  const inserted = await sql<{ key: string }>`
    insert into idempotency_keys (project_id, key, request_hash) values (${projectId}, ${idem.key}, ${idem.requestHash})
    on conflict do nothing returning key`.execute(tx);
  if (inserted.rows.length > 0) return null;
  const existing = await tx
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('key', '=', idem.key)
    .executeTakeFirstOrThrow();
  if (!existing.request_hash.equals(idem.requestHash)) {
    throw new ConflictError(
      'This Idempotency-Key was already used with a different request; use a new key for a new request',
    );
  }
  return { replay: existing.response };
}
