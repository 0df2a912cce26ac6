import { deliveryJobKey, deliveryTask } from '../../db/enqueue.ts';
import type { EmailStatus } from '../../db/schema.ts';
import { domainOf } from '../../mail/address.ts';
import type { DomainContext } from '../core/context.ts';
import { NotFoundError, SendRefusedError, ValidationError } from '../core/errors.ts';
import { type ProjectFacts, type Stream, sharedDefaultFrom } from '../plans/project-facts.ts';
import { expandTemplates, type TemplateUse } from '../templates/send.ts';
import { projectsWithWebhooks } from '../webhooks/subscribed.ts';
import type { TargetPolicy } from '../webhooks/target.ts';
import { fetchAttachmentPaths, fetchEachAttachmentPaths } from './attachment-url.ts';
import { emailRow } from './email-row.ts';
import { write as writeNow } from './email-writer.ts';
import {
  claimIdempotencyKey,
  dropExpiredKey,
  type Idempotency,
  storeAnswer,
  storedResponse,
} from './idempotency.ts';
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
  { batch, templateSubjectWins: subjectWins }: AcceptOptions,
): Promise<Checked> {
  const label = (i: number) => (batch ? `Message ${i}: ` : '');
  const now = new Date();
  const expanded = await expandTemplates(ctx, sender.facts.id, inputs, label, { subjectWins });
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

/**
 * Each message checked on its own: the invalid ones go to `refused` (those already refused, a
 * file of theirs not fetched, with the rest), the others are kept.
 */
async function checkEach(
  ctx: DomainContext,
  sender: Sender,
  inputs: (EmailInput | ValidationError)[],
  refused: Refusal[],
  subjectWins: boolean | undefined,
): Promise<Checked> {
  const now = new Date();
  const checked: Checked = { messages: [], indexes: [], used: [] };
  for (const [index, input] of inputs.entries()) {
    try {
      if (input instanceof ValidationError) throw input;
      const expanded = await expandTemplates(ctx, sender.facts.id, [input], () => '', { subjectWins });
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
  refused.sort((a, b) => a.index - b.index);
  return checked;
}

/** The messages checked, their files fetched first when the door asks for it (after any replay). */
async function checkInputs(
  ctx: DomainContext,
  sender: Sender,
  inputs: EmailInput[],
  opts: AcceptOptions,
): Promise<Checked> {
  if (!opts.refused) {
    const fetched = opts.fetchFrom ? await fetchAttachmentPaths(opts.fetchFrom, inputs) : inputs;
    return checkAll(ctx, sender, fetched, opts);
  }
  // what refuses the request whole, before any file is fetched
  checkStream(sender.facts, sender.stream);
  const outcomes = opts.fetchFrom ? await fetchEachAttachmentPaths(opts.fetchFrom, inputs) : inputs;
  return checkEach(ctx, sender, outcomes, opts.refused, opts.templateSubjectWins);
}

export type { Idempotency } from './idempotency.ts';

/**
 * What an accept answers: the messages it accepted now, or (a retry of an idempotent request) the
 * first request's answer as it was stored, with the messages it accepted read from it; `response`
 * is the answer as the door gives it, the same both times.
 */
export type AcceptResult =
  | { kind: 'accepted'; emails: AcceptedEmail[]; response: unknown }
  | { kind: 'replay'; emails: AcceptedEmail[]; response: unknown };

export interface AcceptOptions {
  batch: boolean;
  idempotency?: Idempotency;
  /**
   * A permissive batch (Resend's `x-batch-validation: permissive`): each message is checked on its
   * own, the invalid ones are named here by their index and the valid ones are accepted together,
   * in one write. Without it a batch is refused whole at its first invalid message.
   */
  refused?: Refusal[];
  /**
   * Attachments given by `path` are fetched under this policy (attachment-url.ts): after a replay
   * is answered, before any check; in a permissive batch a file not fetched refuses its message.
   */
  fetchFrom?: TargetPolicy;
  /**
   * A subject given beside a template replaces the template's, as Resend has it (its door);
   * without it /v1 refuses the two together, as Postmark and Loops do.
   */
  templateSubjectWins?: boolean;
  /**
   * The answer as the door words it, given and stored for a replay; by default a batch's `{data}`
   * (with `errors` when permissive), a single message's object.
   */
  answer?: (emails: AcceptedEmail[], refused: Refusal[]) => unknown;
}

function answerOf(opts: AcceptOptions, emails: AcceptedEmail[]): unknown {
  if (opts.answer) return opts.answer(emails, opts.refused ?? []);
  return opts.batch ? { data: emails, ...(opts.refused ? { errors: opts.refused } : {}) } : emails[0];
}

/**
 * Accepts messages for delivery: answers a retry of an idempotent request first (before any check: the
 * send it repeats may have used the last of a limit; before any file is fetched again), fetches the
 * attachments given by `path` when the door asks for it, validates every message (a batch is refused
 * whole, naming the first bad message), runs the send checks, then commits the rows, their events,
 * usage and delivery jobs in one transaction before answering. Suppressed recipients are dropped; a
 * message with none left is stored as `suppressed`.
 */
export async function acceptEmails(
  ctx: DomainContext,
  sender: Sender,
  inputs: EmailInput[],
  opts: AcceptOptions,
): Promise<AcceptResult> {
  const projectId = sender.facts.id;
  if (opts.idempotency) {
    const stored = await storedResponse(ctx.db, projectId, opts.idempotency);
    if (stored) return stored;
  }
  const checked = await checkInputs(ctx, sender, inputs, opts);
  const { messages } = checked;
  const accepted = (emails: AcceptedEmail[]): AcceptResult => ({
    kind: 'accepted',
    emails,
    response: answerOf(opts, emails),
  });
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

  if (opts.idempotency) await dropExpiredKey(ctx.db, projectId, opts.idempotency);

  const { results, write } = prepareWrite(ctx, sender, messages, suppressed, checked.used);
  // messages stored as suppressed never reach the worker: announce them in the same write
  const suppressedIds = results.filter((r) => r.status === 'suppressed').map((r) => r.id);
  if (suppressedIds.length > 0 && (await projectsWithWebhooks(ctx.db, [projectId])).size > 0)
    write.jobs.push({ task: 'webhook_dispatch', payload: { suppressed_email_ids: suppressedIds } });
  const answer = accepted(results);
  if (!opts.idempotency) {
    await (ctx.emailWriter ? ctx.emailWriter.submit(write) : writeNow(ctx.db, write));
    return answer;
  }
  const idempotency = opts.idempotency;
  return ctx.db.transaction().execute(async (tx) => {
    const replay = await claimIdempotencyKey(tx, projectId, idempotency);
    if (replay) return replay;
    await applyWrite(tx, write);
    // the answer given is the one stored: a replay says exactly what it said
    await storeAnswer(tx, projectId, idempotency, answer.response);
    return answer;
  });
}

/** The sending domain's tracking of transactional mail (PATCH /v1/domains/{id}). */
function trackingOf(facts: ProjectFacts, from: string) {
  const domain = domainOf(from);
  return {
    opens: facts.open_tracking_domains.includes(domain),
    clicks: facts.click_tracking_domains.includes(domain),
  };
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
        tracking: trackingOf(sender.facts, m.from.address),
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
