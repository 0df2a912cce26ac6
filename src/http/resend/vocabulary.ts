import { createHash } from 'node:crypto';
import { sql } from 'kysely';

/**
 * The door's one table of Resend's words for Posthorn's (issue 51, item 3) for the resources of
 * events.ts, automations.ts, logs.ts, receiving.ts, suppressions.ts, webhook-events.ts,
 * templates.ts, topics.ts, contact-properties.ts, contact-imports.ts and usage.ts: field
 * names, statuses and kinds, and the ids Resend gives things Posthorn keys otherwise. Nothing
 * here is stored: each id is derived from what identifies the row already.
 */

/** Resend's field name for each Posthorn field these resources show under another name. */
export const FIELDS = {
  suppression: { reason: 'origin', source_email_id: 'source_id' },
  event: { name: 'event', properties: 'payload' },
  log: { path: 'endpoint', status: 'response_status' },
  // a flow's step successors are an automation's connections; an enrollment is a run
  automation: { next: 'connections' },
  automation_run: { finished_at: 'completed_at' },
  received_email: { from_header: 'from', rcpt_to: 'received_for', disposition: 'content_disposition' },
  // an event is one message of the delivery log, named by its first attempt's id
  webhook_event: { event_type: 'type', next_retry_at: 'next_attempt_at' },
  webhook_attempt: { status_code: 'http_status_code', response_excerpt: 'response', updated_at: 'sent_at' },
  // a template's name is also its alias; a version is `{id}.{version}`
  template: { name: 'alias', text_body: 'text', from_address: 'from', latest_version: 'current_version_id' },
  template_variable: { name: 'key', default: 'fallback_value' },
  // a contact property is a key contacts hold, named by it
  contact_property: { key: 'id', first_seen: 'created_at' },
  contact_topic: { subscription: 'subscription' },
  contact_import: {
    finished_at: 'completed_at',
    error_count: 'counts.failed',
    mapping: 'column_map',
    list_ids: 'segments',
  },
  usage: { lists: 'segments', campaigns: 'broadcasts', enrollments: 'automation_runs' },
} as const;

/** `row` with the keys FIELDS[kind] names in Resend's names (the values as given, other keys kept). */
export function inResendFields(kind: keyof typeof FIELDS, row: Record<string, unknown>) {
  const names: Record<string, string> = FIELDS[kind];
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [names[k] ?? k, v]));
}

/** An import's status as a contact import's. */
export const IMPORT_STATUS: Record<string, 'queued' | 'in_progress' | 'completed' | 'failed'> = {
  queued: 'queued',
  running: 'in_progress',
  completed: 'completed',
  failed: 'failed',
};

/** A suppression's reason as Resend's `origin` (an unsubscribe is one the reader asked for). */
export const SUPPRESSION_ORIGIN: Record<string, 'bounce' | 'complaint' | 'manual'> = {
  hard_bounce: 'bounce',
  complaint: 'complaint',
  manual: 'manual',
  unsubscribe: 'manual',
};

/** Resend's `origin` filter as Posthorn's reasons. */
export const ORIGIN_REASONS: Record<string, string[]> = {
  bounce: ['hard_bounce'],
  complaint: ['complaint'],
  manual: ['manual', 'unsubscribe'],
};

/** A flow's status as an automation's: only an active flow runs. */
export const automationStatus = (flowStatus: string) => (flowStatus === 'active' ? 'enabled' : 'disabled');

/** An enrollment's status as a run's. */
export const RUN_STATUS: Record<string, 'running' | 'completed' | 'failed' | 'cancelled'> = {
  active: 'running',
  completed: 'completed',
  exited: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
};

/** Resend's run statuses as enrollment statuses (the `status` filter of runs.list). */
export const ENROLLMENT_STATUSES: Record<string, string[]> = {
  running: ['active'],
  completed: ['completed', 'exited'],
  failed: ['failed'],
  cancelled: ['cancelled'],
};

/** A flow step's type as an automation step's (a webhook step has no Resend counterpart). */
export const STEP_TYPE: Record<string, string> = {
  send: 'send_email',
  wait: 'delay',
  wait_for_event: 'wait_for_event',
  branch: 'condition',
  update_contact: 'contact_update',
  webhook: 'webhook',
};

/** A step's outcome in an enrollment's history as a run step's status. */
export const RUN_STEP_STATUS: Record<string, string> = {
  failed: 'failed',
  over_allowance: 'waiting',
  send_refused: 'waiting',
  quiet_hours: 'waiting',
  queued: 'waiting',
  not_subscribed_to_topic: 'skipped',
  suppressed: 'skipped',
  unsubscribed: 'skipped',
};

/** A webhook delivery's status as the status of Resend's webhook event. */
export const WEBHOOK_EVENT_STATUS: Record<string, 'success' | 'pending' | 'failed' | 'attempting'> = {
  succeeded: 'success',
  pending: 'pending',
  failed: 'failed',
};

/** A stable UUID for something Posthorn keys by name (an event's name, a suppressed address). */
export function derivedId(...parts: string[]): string {
  const hex = createHash('md5').update(parts.join(':')).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** `derivedId` in SQL, of text expressions, to find a row by the id the door showed for it. */
export const derivedIdSql = (...parts: ReturnType<typeof sql>[]) =>
  sql<string>`md5(${sql.join(parts, sql` || ':' || `)})::uuid::text`;

/** A request log entry's number as a UUID (Resend's log ids are UUIDs), and back. */
export const logId = (n: number | string) =>
  `00000000-0000-4000-8000-${BigInt(n).toString(16).padStart(12, '0')}`;
export function logNumber(id: string): string | null {
  const m = /^00000000-0000-4000-8000-([0-9a-f]{12})$/i.exec(id);
  return m ? BigInt(`0x${m[1]}`).toString() : null;
}
