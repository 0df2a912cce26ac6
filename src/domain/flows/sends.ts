import { sql } from 'kysely';
import type { EnrollmentHistoryEntry, TemplateData } from '../../db/schema.ts';
import { addressOf, type Mailbox } from '../../mail/address.ts';
import { now as serviceNow } from '../core/clock.ts';
import type { DomainContext } from '../core/context.ts';
import {
  DomainError,
  PlanFeatureError,
  RateLimitError,
  SendRefusedError,
  ValidationError,
} from '../core/errors.ts';
import { contactZone, quietUntil } from '../core/local-time.ts';
import { emailRow, mailboxOf, renderedBody } from '../emails/email-row.ts';
import { checkSend, checkSender } from '../emails/send-checks.ts';
import type { EmailRowInput } from '../emails/write.ts';
import { type LocalTimeSettings, localTimeOf } from '../plans/local-time-settings.ts';
import { type ProjectFacts, projectFacts, sharedDefaultFrom } from '../plans/project-facts.ts';
import { type MessageInput, messageSource, messageVariables } from '../templates/message-checks.ts';
import type { RenderSource, TemplateContact } from '../templates/render.ts';
import { type RenderOutcome, renderEach } from '../templates/render-pool.ts';
import { type ResolvedVersion, resolveVersions } from '../templates/send.ts';
import type { SendStep } from './definition.ts';
import { finish, record, retryLater, type Walker } from './steps.ts';

/**
 * Send steps, for every enrollment of a batch that reached one: the checks of every send path
 * (the contact still subscribed and not suppressed, else it exits; a step for a topic the contact
 * is not subscribed to is passed without its message, `TOPIC_SKIP`; one reached in the project's
 * quiet hours, local to the contact, waits for their end, `QUIET_HOURS`; the account able to send, the
 * `from` allowed, the plan's allowance, else it tries again in an hour), then the message rendered
 * for the contact and built as an `emails` row of stream `automation` (written by the engine with
 * the batch, through the one durable write of every send).
 */

function contactOf(w: Walker): TemplateContact {
  return {
    email: w.row.email,
    first_name: w.row.first_name,
    last_name: w.row.last_name,
    properties: w.properties,
  };
}

/** How long a send that may not go now (allowance, sender) waits before it is tried again. */
export const RETRY_SEND_MS = 3_600_000;

/** What one send step's messages are made of. */
interface SendContent {
  source: RenderSource;
  template: { id: string; version: number; variables: Record<string, unknown> } | null;
  from: Mailbox;
  replyTo: string | null;
}

/** A message the batch will write, with the history entry that names it. */
export interface PlannedSend {
  walker: Walker;
  step_id: string;
  email: EmailRowInput;
  shared: boolean;
  entry: EnrollmentHistoryEntry;
}

/** A send that passed the per-enrollment checks, before the allowance and the render. */
interface Checked {
  walker: Walker;
  step: SendStep;
  content: SendContent;
  /** From the shared domain's default address (counted against its daily cap). */
  shared: boolean;
}

/** What a batch's sends share: project facts, contents, and what it has planned so far. */
export class SendPlan {
  readonly sends: PlannedSend[] = [];
  private readonly facts = new Map<string, ProjectFacts>();
  private readonly localTimes = new Map<string, LocalTimeSettings>();
  private readonly contents = new Map<string, Promise<SendContent>>();
  /** The `from` of each send planned so far, by project. */
  private readonly planned = new Map<string, string[]>();
  private readonly ctx: DomainContext;
  private readonly now: Date;

  constructor(ctx: DomainContext, now: Date) {
    this.ctx = ctx;
    this.now = now;
  }

  private async factsOf(projectId: string): Promise<ProjectFacts> {
    let facts = this.facts.get(projectId);
    if (!facts) {
      facts = await projectFacts(this.ctx, projectId);
      this.facts.set(projectId, facts);
    }
    return facts;
  }

  /**
   * When the project's quiet hours end for the contact (in `properties.timezone`, else the
   * project's zone) if the service's clock (core/clock.ts) is inside them, as the real instant the
   * enrollment wakes at; null outside them or without quiet hours.
   */
  private async quietEnd(w: Walker): Promise<Date | null> {
    let settings = this.localTimes.get(w.row.project_id);
    if (!settings) {
      settings = await localTimeOf(this.ctx.db, w.row.project_id);
      this.localTimes.set(w.row.project_id, settings);
    }
    if (!settings.quiet_hours) return null;
    const at = serviceNow().getTime();
    const until = quietUntil(at, contactZone(w.properties, settings.time_zone), settings.quiet_hours);
    return until === null ? null : new Date(this.now.getTime() + (until - at));
  }

  /** The step's content, resolved once per batch (a template's version read through its cache). */
  private contentOf(w: Walker, step: SendStep): Promise<SendContent> {
    const key = `${w.defKey}#${step.id}`;
    let found = this.contents.get(key);
    if (!found) {
      found = resolveContent(this.ctx, w, step, key);
      // a rejection is read per enrollment below; the stored promise must not be reported unhandled
      found.catch(() => {});
      this.contents.set(key, found);
    }
    return found;
  }

  /**
   * Plans the sends of one round (every enrollment of the batch now at a send step): checks, then
   * renders. Each enrollment either has its message planned and moves on to the step's `next`,
   * exits, fails, or sleeps to try again.
   */
  async plan(pending: { walker: Walker; step: SendStep }[]): Promise<void> {
    const byProject = new Map<string, Checked[]>();
    const leftTopic = await notSubscribedToTopic(this.ctx, pending);
    for (const [i, { walker: w, step }] of pending.entries()) {
      if (!w.row.subscribed || w.row.suppressed) {
        const reason = w.row.subscribed ? 'suppressed' : 'unsubscribed';
        record(w, step, this.now, reason);
        finish(w, 'exited', reason);
        continue;
      }
      // a step for a topic the contact is not subscribed to: passed without its message
      if (leftTopic.has(i)) {
        record(w, step, this.now, TOPIC_SKIP);
        w.at = step.next;
        continue;
      }
      // the project's quiet hours in the contact's zone: the send waits for their end
      const quietEnd = await this.quietEnd(w);
      if (quietEnd) {
        retryLater(w, step, this.now, QUIET_HOURS, quietEnd);
        continue;
      }
      const facts = await this.factsOf(w.row.project_id);
      let checked: Checked;
      try {
        const content = await this.contentOf(w, step);
        checked = {
          walker: w,
          step,
          content,
          shared: checkSender(this.ctx, facts, 'automation', content.from.address),
        };
      } catch (err) {
        this.refuse(w, step, err);
        continue;
      }
      const mine = byProject.get(w.row.project_id) ?? [];
      mine.push(checked);
      byProject.set(w.row.project_id, mine);
    }
    for (const [projectId, sends] of byProject) {
      const facts = await this.factsOf(projectId);
      // the allowance holds for this round's sends with those the batch planned before
      const from = [...(this.planned.get(projectId) ?? []), ...sends.map((s) => s.content.from.address)];
      try {
        await checkSend(this.ctx, facts, { stream: 'automation', from });
      } catch (err) {
        if (!(err instanceof PlanFeatureError || err instanceof RateLimitError)) throw err;
        for (const s of sends) this.refuse(s.walker, s.step, err);
        continue;
      }
      this.planned.set(projectId, from);
      const contacts = sends.map((s) => contactOf(s.walker));
      // rendered (to check them, and to keep the subject) in the template pool, within its budget
      const renders = await renderEach(
        projectId,
        sends.map(({ content }, i) => ({
          source: content.source,
          given: content.template?.variables,
          contact: contacts[i],
          deriveText: false,
        })),
      );
      for (const [i, s] of sends.entries()) this.planSend(s, contacts[i], renders[i]);
    }
  }

  /** A send that may not go: a permanent problem fails the enrollment, the others wait and retry. */
  private refuse(w: Walker, step: SendStep, err: unknown) {
    if (err instanceof PlanFeatureError || err instanceof RateLimitError)
      retryLater(w, step, this.now, 'over_allowance', new Date(this.now.getTime() + RETRY_SEND_MS));
    else if (err instanceof SendRefusedError)
      retryLater(w, step, this.now, 'send_refused', new Date(this.now.getTime() + RETRY_SEND_MS));
    else if (err instanceof DomainError) {
      record(w, step, this.now, 'failed');
      finish(w, 'failed', err.message);
    } else throw err;
  }

  private planSend(
    { walker: w, step, content, shared }: Checked,
    contact: TemplateContact,
    rendered: RenderOutcome,
  ) {
    if ('error' in rendered) {
      this.refuse(w, step, new ValidationError(rendered.error));
      return;
    }
    const data: TemplateData | null = content.template
      ? { variables: content.template.variables, contact }
      : null;
    const email = emailRow({
      projectId: w.row.project_id,
      origin: { kind: 'flow', flowId: w.row.flow_id, stepId: step.id, contactId: w.row.contact_id },
      from: content.from,
      to: [mailboxOf(w.row.email)],
      replyTo: content.replyTo ? [mailboxOf(content.replyTo)] : [],
      body: renderedBody(rendered, content.template, data),
    });
    record(w, step, this.now, 'sent', email.id);
    this.sends.push({
      walker: w,
      step_id: step.id,
      email,
      shared,
      // the history entry just added, kept so the guard can turn it into `already_sent`
      entry: w.added.at(-1) as EnrollmentHistoryEntry,
    });
    w.at = step.next;
  }
}

/** The history outcome of a send step reached in the project's quiet hours (it waits for their end). */
export const QUIET_HOURS = 'quiet_hours';

/** The history outcome (and step stats' `skipped`) of a send step passed for its topic. */
export const TOPIC_SKIP = 'not_subscribed_to_topic';

/**
 * Which of the pending sends (by index) name a topic their contact is not subscribed to: no
 * choice and an `opt_out` default, a choice to leave it, or a topic deleted since (nobody's). One
 * query for the round, none when no step names a topic.
 */
async function notSubscribedToTopic(
  ctx: DomainContext,
  pending: { walker: Walker; step: SendStep }[],
): Promise<Set<number>> {
  const asked = [...pending.entries()].filter(([, p]) => p.step.topic_id !== undefined);
  if (asked.length === 0) return new Set();
  const { rows } = await sql<{ i: number }>`
    select x.i from unnest(${asked.map(([i]) => i)}::int[], ${asked.map(([, p]) => p.walker.row.contact_id)}::uuid[],
                           ${asked.map(([, p]) => p.step.topic_id)}::uuid[], ${asked.map(([, p]) => p.walker.row.project_id)}::uuid[])
             as x(i, contact_id, topic_id, project_id)
      left join topics t on t.id = x.topic_id and t.project_id = x.project_id
      left join contact_topics ct on ct.contact_id = x.contact_id and ct.topic_id = t.id
     where not coalesce(ct.subscribed, t.default_subscription = 'opt_in', false)`.execute(ctx.db);
  return new Set(rows.map((r) => r.i));
}

/** A send step's message: its subject and inline HTML, or its subject over the template's version. */
export function flowMessage(step: SendStep, version: ResolvedVersion | null): MessageInput {
  return {
    subject: step.subject,
    html: version ? null : step.html,
    template: version,
    variables: step.variables ?? null,
  };
}

async function resolveContent(
  ctx: DomainContext,
  w: Walker,
  step: SendStep,
  cacheKey: string,
): Promise<SendContent> {
  // flows.ts settles every send step's sender when the flow is saved; the shared default otherwise
  const from = step.from ?? sharedDefaultFrom(ctx);
  const version =
    step.template_id === null
      ? null
      : (
          await resolveVersions(ctx, w.row.project_id, [
            { id: step.template_id, version: step.template_version ?? undefined },
          ])
        )[0];
  const message = flowMessage(step, version);
  return {
    source: messageSource(message, `flow:${cacheKey}`),
    template: version && {
      id: version.templateId,
      version: version.version,
      variables: messageVariables(message),
    },
    from: { name: step.from_name ?? '', address: from },
    replyTo: version?.replyTo ? addressOf(version.replyTo) : null,
  };
}
