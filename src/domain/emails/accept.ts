import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { Db, Tx } from '../../db/database.ts';
import { deliveryJobKey, deliveryTask } from '../../db/enqueue.ts';
import type { EmailStatus } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError, NotFoundError, SendRefusedError, ValidationError } from '../core/errors.ts';
import { type ProjectFacts, type Stream, sharedDefaultFrom } from '../plans/project-facts.ts';
import { expandTemplates, type TemplateUse } from '../templates/send.ts';
import { projectsWithWebhooks } from '../webhooks/subscribed.ts';
import { emailRow } from './email-row.ts';
import { write as writeNow } from './email-writer.ts';
import { checkFromAddress, checkSend, checkStream } from './send-checks.ts';
import { suppressedAmong } from './suppressions.ts';
import { type EmailInput, type ValidEmail, validateEmail } from './validate.ts';
import { applyWrite, type EmailWrite } from './write.ts';

/** Who sends: the project (with its facts, read at authentication), the key, and the stream. */
export interface Sender {
  facts: ProjectFacts;
  apiKeyId: string | null;
  stream: Stream;
  /** A door's own trace header for each message (SMTP submission's `Received`), added after validation. */
  traceHeader?: (emailId: string) => string;
}

export interface AcceptedEmail {
  id: string;
  object: 'email';
  status: string;
  warnings?: string[];
}

/** A message of a permissive batch that was not accepted, and why. */
export interface Refusal {
  index: number;
  message: string;
}

interface Checked {
  /** The valid messages, in order, and the index each had in the request. */
  messages: ValidEmail[];
  indexes: number[];
  used: (TemplateUse | null)[];
}

/** Every message checked, the first invalid one refusing them all (named by index in a batch). */
async function checkAll(
  ctx: DomainContext,
  sender: Sender,
  inputs: EmailInput[],
  batch: boolean,
): Promise<Checked> {
  const label = (i: number) => (batch ? `Message ${i}: ` : '');
  const now = new Date();
  const expanded = await expandTemplates(ctx, sender.facts.id, inputs, label);
  const messages = expanded.inputs.map((input, i) => {
    try {
      return validateEmail(input, now);
    } catch (err) {
      if (err instanceof ValidationError && batch) throw new ValidationError(`${label(i)}${err.message}`);
      throw err;
    }
  });
  return { messages, indexes: messages.map((_, i) => i), used: expanded.used };
}

/** The refusals that concern one message (its fields, its template, its `from`), not the request. */
const ofOneMessage = (err: unknown) =>
  err instanceof ValidationError ||
  err instanceof NotFoundError ||
  (err instanceof SendRefusedError && err.reason === 'unverified_domain');

/** Each message checked on its own: the invalid ones go to `refused`, the rest are kept. */
async function checkEach(
  ctx: DomainContext,
  sender: Sender,
  inputs: EmailInput[],
  refused: Refusal[],
): Promise<Checked> {
  checkStream(sender.facts, sender.stream);
  const now = new Date();
  const checked: Checked = { messages: [], indexes: [], used: [] };
  for (const [index, input] of inputs.entries()) {
    try {
      const expanded = await expandTemplates(ctx, sender.facts.id, [input], () => '');
      const message = validateEmail(expanded.inputs[0], now);
      checkFromAddress(ctx, sender.facts, message.from.address);
      checked.messages.push(message);
      checked.indexes.push(index);
      checked.used.push(expanded.used[0]);
    } catch (err) {
      if (!ofOneMessage(err)) throw err;
      refused.push({ index, message: (err as Error).message });
    }
  }
  return checked;
}

export interface Idempotency {
  key: string;
  /** Identifies the request: same key with another request is a conflict. */
  requestHash: Buffer;
}

/**
 * What an accept answers: the messages it accepted now, or (a retry of an idempotent request) the
 * first request's answer as it was stored, with the messages it accepted read from it.
 */
export type AcceptResult =
  | { kind: 'accepted'; emails: AcceptedEmail[] }
  | { kind: 'replay'; emails: AcceptedEmail[]; response: unknown };

const accepted = (emails: AcceptedEmail[]): AcceptResult => ({ kind: 'accepted', emails });

export function requestHash(path: string, body: unknown): Buffer {
  return createHash('sha256').update(path).update('\n').update(JSON.stringify(body)).digest();
}

/**
 * Accepts messages for delivery: answers a retry of an idempotent request first (before any check: the
 * send it repeats may have used the last of a limit), validates every message (a batch is refused
 * whole, naming the first bad message), runs the send checks, then commits the rows, their events,
 * usage and delivery jobs in one transaction before answering. Suppressed recipients are dropped; a
 * message with none left is stored as `suppressed`.
 */
export async function acceptEmails(
  ctx: DomainContext,
  sender: Sender,
  inputs: EmailInput[],
  opts: {
    batch: boolean;
    idempotency?: Idempotency;
    /**
     * A permissive batch (Resend's `x-batch-validation: permissive`): each message is checked on its
     * own, the invalid ones are named here by their index and the valid ones are accepted together,
     * in one write. Without it a batch is refused whole at its first invalid message.
     */
    refused?: Refusal[];
  },
): Promise<AcceptResult> {
  const projectId = sender.facts.id;
  if (opts.idempotency) {
    const stored = await storedResponse(ctx.db, projectId, opts.idempotency);
    if (stored) return stored;
  }
  const checked = opts.refused
    ? await checkEach(ctx, sender, inputs, opts.refused)
    : await checkAll(ctx, sender, inputs, opts.batch);
  const { messages } = checked;
  if (messages.length === 0) return accepted([]);
  try {
    await checkSend(ctx, sender.facts, {
      stream: sender.stream,
      from: messages.map((m) => m.from.address),
      label: (i) => (opts.batch ? `Message ${checked.indexes[i]}: ` : ''),
    });
  } catch (err) {
    // the identical request may have committed since the lookup above, using the last of the limit
    const stored = opts.idempotency && (await storedResponse(ctx.db, projectId, opts.idempotency));
    if (stored) return stored;
    throw err;
  }
  const allRecipients = messages.flatMap((m) => [...m.to, ...m.cc, ...m.bcc].map((r) => r.address));
  // the worker checks again just before sending, so a suppression added meanwhile still holds
  const suppressed = sender.facts.has_suppressions
    ? await suppressedAmong(ctx.pool, projectId, allRecipients, sender.stream)
    : new Set<string>();

  if (opts.idempotency) {
    await ctx.db
      .deleteFrom('idempotency_keys')
      .where('project_id', '=', projectId)
      .where('key', '=', opts.idempotency.key)
      .where('created_at', '<', idempotencyCutoff())
      .execute();
  }

  const { results, write } = prepareWrite(ctx, sender, messages, suppressed, checked.used);
  // messages stored as suppressed never reach the worker: announce them in the same write
  const suppressedIds = results.filter((r) => r.status === 'suppressed').map((r) => r.id);
  if (suppressedIds.length > 0 && (await projectsWithWebhooks(ctx.db, [projectId])).size > 0)
    write.jobs.push({ task: 'webhook_dispatch', payload: { suppressed_email_ids: suppressedIds } });
  if (!opts.idempotency) {
    await (ctx.emailWriter ? ctx.emailWriter.submit(write) : writeNow(ctx.db, write));
    return accepted(results);
  }
  const idempotency = opts.idempotency;
  return ctx.db.transaction().execute(async (tx) => {
    const replay = await claimIdempotencyKey(tx, projectId, idempotency);
    if (replay) return replay;
    await applyWrite(tx, write);
    await tx
      .updateTable('idempotency_keys')
      .set({
        status_code: 200,
        response: JSON.stringify(
          opts.batch ? { data: results, ...(opts.refused ? { errors: opts.refused } : {}) } : results[0],
        ),
      })
      .where('project_id', '=', projectId)
      .where('key', '=', idempotency.key)
      .execute();
    return accepted(results);
  });
}

function prepareWrite(
  ctx: DomainContext,
  sender: Sender,
  messages: ValidEmail[],
  suppressed: Set<string>,
  templates: (TemplateUse | null)[],
) {
  const projectId = sender.facts.id;
  const sharedFrom = sharedDefaultFrom(ctx);
  const write: EmailWrite = { emails: [], attachments: [], events: [], usage: [], jobs: [], immediate: [] };
  const results: AcceptedEmail[] = [];
  let total = 0;
  let onShared = 0;
  for (const [n, m] of messages.entries()) {
    const recipients = [...m.to, ...m.cc, ...m.bcc].map((r) => r.address);
    const blocked = recipients.filter((r) => suppressed.has(r.toLowerCase()));
    const status: EmailStatus =
      blocked.length === recipients.length ? 'suppressed' : m.scheduledAt ? 'scheduled' : 'queued';
    const template = templates[n];
    const row = emailRow({
      projectId,
      origin: {
        kind: 'request',
        stream: sender.stream,
        apiKeyId: sender.apiKeyId,
        tags: m.tags,
        headers: m.headers,
        traceHeader: sender.traceHeader,
      },
      status,
      from: m.from,
      to: m.to,
      cc: m.cc,
      bcc: m.bcc,
      replyTo: m.replyTo,
      // a template email is rendered again from its version and data when it leaves
      body: {
        subject: m.subject,
        html: template ? null : m.html,
        text: template ? null : m.text,
        sizeBytes: m.sizeEstimate,
        template: template && { id: template.templateId, version: template.version, data: template.data },
      },
      attachments: m.attachments.map((a) => ({
        filename: a.filename,
        content_type: a.contentType,
        content_id: a.contentId,
        size: a.content.length,
      })),
      scheduledAt: m.scheduledAt,
    });
    const id = row.id;
    if (status === 'scheduled') {
      write.jobs.push({
        task: deliveryTask(sender.stream),
        payload: { ids: [id] },
        runAt: m.scheduledAt,
        jobKey: deliveryJobKey(id),
      });
    }
    if (status === 'queued') write.immediate.push(id);
    if (status !== 'suppressed') {
      total++;
      if (m.from.address === sharedFrom) onShared++;
    }
    results.push({ id, object: 'email', status, ...(m.warnings.length ? { warnings: m.warnings } : {}) });
    write.emails.push(row);
    m.attachments.forEach((a, position) => {
      write.attachments.push({ email_id: id, position, content: a.content });
    });
    write.events.push({
      email_id: id,
      project_id: projectId,
      type: status,
      recipient: null,
      detail: m.scheduledAt ? { scheduled_at: m.scheduledAt } : {},
    });
    if (status !== 'suppressed') {
      for (const r of blocked) {
        write.events.push({
          email_id: id,
          project_id: projectId,
          type: 'suppressed',
          recipient: r,
          detail: { reason: 'recipient is on the suppression list' },
        });
      }
    }
  }
  if (total > 0) write.usage.push({ projectId, total, onSharedDomain: onShared });
  return { results, write };
}

const IDEMPOTENCY_TTL_MS = 86_400_000;
const idempotencyCutoff = () => new Date(Date.now() - IDEMPOTENCY_TTL_MS);

/** The stored answer for a request's key: the replay for the same request, 409 for another one. */
function answerFromStored(
  stored: { request_hash: Buffer; response: unknown },
  idem: Idempotency,
): AcceptResult {
  if (!stored.request_hash.equals(idem.requestHash)) {
    throw new ConflictError(
      'This Idempotency-Key was already used with a different request; use a new key for a new request',
    );
  }
  // stored as answered: a batch's `{data: [...]}`, a single message's object
  const response = stored.response as { data?: AcceptedEmail[] } | AcceptedEmail;
  const emails =
    'data' in response && Array.isArray(response.data) ? response.data : [response as AcceptedEmail];
  return { kind: 'replay', emails, response: stored.response };
}

/**
 * The committed answer under this key (younger than 24 h), if any. Only committed keys are seen, and
 * a key commits together with its response; a request still in flight is caught by
 * `claimIdempotencyKey`.
 */
async function storedResponse(db: Db, projectId: string, idem: Idempotency): Promise<AcceptResult | null> {
  const stored = await db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'response'])
    .where('project_id', '=', projectId)
    .where('key', '=', idem.key)
    .where('created_at', '>=', idempotencyCutoff())
    .where('response', 'is not', null)
    .executeTakeFirst();
  return stored ? answerFromStored(stored, idem) : null;
}

/**
 * Takes the idempotency key for this request. A concurrent request with the same key waits on the
 * unique index until the first commits, then replays its response.
 */
async function claimIdempotencyKey(
  tx: Tx,
  projectId: string,
  idem: Idempotency,
): Promise<AcceptResult | null> {
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
  return answerFromStored(existing, idem);
}
