import type { EnrollmentHistoryEntry } from '../../db/schema.ts';
import { parseIsoDate } from '../core/dates.ts';
import type { EventWhere, FlowDefinition, Step, WaitStep } from './definition.ts';
import { stepById } from './definition.ts';
import { contactZone, nextInWindow } from './windows.ts';

/**
 * What each step does to one enrollment, computed in Node from its version's definition. An
 * enrollment "walks" from its current step until it must stop (a wait, a wait_for_event, the end,
 * an exit, a failure) or reaches a step that needs the database for the whole batch at once (a
 * branch's conditions, a send's checks, a contact update): the engine (engine.ts) resolves those
 * set-based for every enrollment of the batch and lets them walk on.
 */

/** Why an enrollment sleeps: the end of a plain wait, or a wait_for_event (matched by a tracked event). */
export type WaitingFor =
  | { kind: 'wait'; until: string }
  | { kind: 'event'; event: string; where: EventWhere[]; since: string; matched?: boolean };

/** A due enrollment as the engine loads it, with its contact. */
export interface DueEnrollment {
  id: string;
  project_id: string;
  flow_id: string;
  version: number;
  contact_id: string;
  step_id: string | null;
  waiting_for: WaitingFor | null;
  /** The last history entry, so a repeated outcome (still over the allowance) is not logged again. */
  last: EnrollmentHistoryEntry | null;
  flow_updated_at: Date;
  created_at: Date;
  email: string;
  first_name: string | null;
  last_name: string | null;
  properties: Record<string, unknown>;
  subscribed: boolean;
  suppressed: boolean;
}

/** Where a walk ended: still active (asleep until wake_at) or finished. */
export type WalkEnd =
  | { status: 'active'; step_id: string; wake_at: Date; waiting_for: WaitingFor | null }
  | { status: 'completed' | 'exited' | 'failed'; exit_reason: string | null };

/** A webhook step passed: the signed POST the engine queues with the batch. */
export interface PlannedWebhook {
  walker: Walker;
  url: string;
  step_id: string;
  /** The history entry that names the call, kept so a call not made can say why. */
  entry: EnrollmentHistoryEntry;
}

export interface Walker {
  row: DueEnrollment;
  def: FlowDefinition;
  /** The definition's identity for caches (flow, version, edit time). */
  defKey: string;
  /** The step to run next; null = the end of the flow. */
  at: string | null;
  /** The sleep this walk wakes from (only for the step it slept at). */
  resume: WaitingFor | null;
  added: EnrollmentHistoryEntry[];
  end: WalkEnd | null;
  /** The contact's properties as this walk has changed them. */
  properties: Record<string, unknown>;
  steps: number;
}

/** Steps passed in one walk before it is taken for an endless loop (a cycle always has a timed wait). */
const MAX_STEPS_PER_WALK = 250;

export function startWalk(row: DueEnrollment, def: FlowDefinition, defKey: string): Walker {
  return {
    row,
    def,
    defKey,
    at: row.step_id,
    resume: row.waiting_for,
    added: [],
    end: null,
    properties: { ...row.properties },
    steps: 0,
  };
}

/** Appends a history entry. */
export function record(w: Walker, step: Step, at: Date, outcome: string, emailId?: string) {
  w.added.push({
    step_id: step.id,
    type: step.type,
    at: at.toISOString(),
    outcome,
    ...(emailId ? { email_id: emailId } : {}),
  });
}

/**
 * Puts the walk to sleep at a step it will try again later (a send over the allowance): logged
 * once, not again on every retry.
 */
export function retryLater(w: Walker, step: Step, at: Date, outcome: string, wakeAt: Date) {
  const last = w.added.at(-1) ?? w.row.last;
  if (last?.step_id !== step.id || last.outcome !== outcome) record(w, step, at, outcome);
  sleep(w, step, wakeAt, null);
}

/** Ends the walk: finished. */
export function finish(w: Walker, status: 'completed' | 'exited' | 'failed', reason: string | null) {
  w.end = { status, exit_reason: reason };
}

/** Ends the walk asleep at `step` until `wakeAt`. */
export function sleep(w: Walker, step: Step, wakeAt: Date, waitingFor: WaitingFor | null) {
  w.end = { status: 'active', step_id: step.id, wake_at: wakeAt, waiting_for: waitingFor };
}

/** A wait's end for this contact, or null (with why) when it is already over or has no date. */
function waitEnd(step: WaitStep, properties: Record<string, unknown>, now: Date): Date | string {
  if (step.duration_seconds !== undefined) return new Date(now.getTime() + step.duration_seconds * 1000);
  if (step.until !== undefined) return new Date(step.until);
  if (step.window !== undefined) return nextInWindow(now, step.window, contactZone(properties));
  const date = parseIsoDate(properties[step.until_property as string]);
  return date ?? 'no_date';
}

/** The steps that need the whole batch (set-based SQL) before the walk can go on. */
export type BatchStep = Extract<Step, { type: 'branch' | 'send' | 'update_contact' }>;

/**
 * Walks the enrollment through the steps that need nothing but its own row: waits (asleep until
 * their end, or through at once when it has passed), wait_for_event (asleep until the timeout, or
 * on along the edge it woke by), webhooks (queued with the batch), exit and the end. Returns the
 * step it stopped at when that needs the batch, else null (the walk ended).
 */
export function walkLocal(w: Walker, now: Date, webhooks: PlannedWebhook[]): BatchStep | null {
  while (w.end === null) {
    if (w.at === null) {
      finish(w, 'completed', null);
      break;
    }
    const step = stepById(w.def, w.at);
    if (!step) {
      finish(w, 'failed', `step ${w.at} is missing from version ${w.row.version}`);
      break;
    }
    if (++w.steps > MAX_STEPS_PER_WALK) {
      finish(w, 'failed', `more than ${MAX_STEPS_PER_WALK} steps without a wait`);
      break;
    }
    const resume = w.resume;
    w.resume = null;
    switch (step.type) {
      case 'wait': {
        if (resume?.kind === 'wait') {
          record(w, step, now, 'waited');
          w.at = step.next;
          break;
        }
        const end = waitEnd(step, w.properties, now);
        if (end instanceof Date && end > now) {
          sleep(w, step, end, { kind: 'wait', until: end.toISOString() });
          break;
        }
        record(w, step, now, typeof end === 'string' ? end : 'waited');
        w.at = step.next;
        break;
      }
      case 'wait_for_event':
        if (resume?.kind === 'event') {
          record(w, step, now, resume.matched ? 'event' : 'timeout');
          w.at = resume.matched ? step.next : step.timeout_next;
          break;
        }
        sleep(w, step, new Date(now.getTime() + step.timeout_seconds * 1000), {
          kind: 'event',
          event: step.event,
          where: step.where,
          since: now.toISOString(),
        });
        break;
      case 'webhook':
        record(w, step, now, 'queued');
        webhooks.push({
          walker: w,
          url: step.url,
          step_id: step.id,
          entry: w.added.at(-1) as EnrollmentHistoryEntry,
        });
        w.at = step.next;
        break;
      case 'exit':
        record(w, step, now, 'exited');
        finish(w, 'exited', 'exit_step');
        break;
      default:
        return step;
    }
  }
  return null;
}
