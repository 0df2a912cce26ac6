import { type Insertable, type NonNullableInsertKeys, type Selectable, sql } from 'kysely';
import type { Db, Tx } from '../../db/database.ts';
import { addJobs, deliveryTask, type JobSpec } from '../../db/enqueue.ts';
import type { EmailsTable } from '../../db/schema.ts';
import type { EmailEventInput } from './events.ts';

// The one durable write of every send (API, SMTP, campaigns, flows, test sends): emails, their
// events, usage and delivery jobs in one statement.

/** Ids a delivery job carries: merged writes share delivery jobs of this many emails. */
export const JOB_CHUNK = 50;

/**
 * The emails columns an accept writes, in one list: each a column of the table (`Insertable`), and
 * `EmailRowInput` below fails to compile while a column an insert requires is missing.
 */
const EMAIL_COLUMNS = [
  'id',
  'project_id',
  'api_key_id',
  'stream',
  'status',
  'message_id',
  'from_header',
  'from_address',
  'to_addresses',
  'cc_addresses',
  'bcc_addresses',
  'reply_to',
  'subject',
  'html',
  'text_body',
  'headers',
  'tags',
  'attachments',
  'scheduled_at',
  'size_bytes',
  'template_id',
  'template_version',
  'template_data',
  'contact_id',
  'campaign_id',
  'track_opens',
  'track_clicks',
  'flow_id',
  'flow_step',
  'recipients',
] as const satisfies readonly (keyof Insertable<EmailsTable>)[];
/** Columns only one kind of send fills (a flow's step): left out, they are null. */
type OptionalEmailColumn = 'flow_id' | 'flow_step';
type EmailColumn = Exclude<(typeof EMAIL_COLUMNS)[number], OptionalEmailColumn>;

/**
 * An emails row as an accept writes it. The rows travel to PostgreSQL as one JSON document, so the
 * JSON columns hold their values (the table's select types), not the strings a Kysely insert takes.
 */
export type EmailRowInput = Pick<Selectable<EmailsTable>, EmailColumn> &
  Partial<Pick<Selectable<EmailsTable>, OptionalEmailColumn>> &
  Record<Exclude<NonNullableInsertKeys<EmailsTable>, EmailColumn | OptionalEmailColumn>, never>;

export interface EmailWrite {
  emails: EmailRowInput[];
  attachments: { email_id: string; position: number; content: Buffer }[];
  events: EmailEventInput[];
  usage: { projectId: string; total: number; onSharedDomain: number }[];
  /** Jobs with their own schedule (scheduled sends). */
  jobs: JobSpec[];
  /** Ids to deliver now; merged writes share delivery jobs of JOB_CHUNK ids. */
  immediate: string[];
  /** The delivery jobs' priority (marketing yields to transactional mail); graphile-worker's default 0 when absent. */
  priority?: number;
}

const EMAIL_COLUMN_LIST = sql.join(EMAIL_COLUMNS.map((c) => sql.ref(c)));

const USAGE_SHARDS = 16;

/**
 * The write of generated messages to deliver now (a campaign's batch, a test send, a flow's
 * steps), all of one project, without attachments: their `queued` events (with `detail`), the
 * usage (`onSharedDomain` of them from the shared domain), and delivery jobs at `priority`.
 */
export function queuedWrite(
  projectId: string,
  emails: EmailRowInput[],
  opts: { detail: Record<string, unknown>; onSharedDomain: number; jobs?: JobSpec[]; priority?: number },
): EmailWrite {
  return {
    emails,
    attachments: [],
    events: emails.map((e) => ({
      email_id: e.id,
      project_id: e.project_id,
      type: 'queued',
      recipient: null,
      detail: opts.detail,
    })),
    usage:
      emails.length > 0 ? [{ projectId, total: emails.length, onSharedDomain: opts.onSharedDomain }] : [],
    jobs: opts.jobs ?? [],
    immediate: emails.map((e) => e.id),
    priority: opts.priority,
  };
}

/**
 * Writes one (or several merged) accepts: rows, events, usage and delivery jobs in ONE statement
 * (atomic on its own, one round trip); attachments, when there are any, follow in the same
 * transaction, so `db` must then be a transaction.
 */
export async function applyWrite(db: Db | Tx, write: EmailWrite): Promise<void> {
  const jobs: JobSpec[] = [...write.jobs];
  // each stream's deliveries go to its task: transactional mail has workers of its own
  const streamOf = new Map(write.emails.map((e) => [e.id, e.stream]));
  const byTask = Map.groupBy(write.immediate, (id) => deliveryTask(streamOf.get(id) ?? 'transactional'));
  for (const [task, ids] of byTask)
    for (let i = 0; i < ids.length; i += JOB_CHUNK)
      jobs.push({ task, payload: { ids: ids.slice(i, i + JOB_CHUNK) }, priority: write.priority });
  const usage = write.usage;
  await sql`
    with inserted_emails as (
      insert into emails (${EMAIL_COLUMN_LIST})
      select ${EMAIL_COLUMN_LIST}
        from json_populate_recordset(null::emails, ${JSON.stringify(write.emails)}::json)
    ), inserted_events as (
      insert into email_events (email_id, project_id, type, recipient, detail)
      select email_id, project_id, type, recipient, detail
        from json_populate_recordset(null::email_events, ${JSON.stringify(write.events)}::json)
    ), counted as (
      insert into sending_usage as s (project_id, day, shard, sent, shared_domain_sent)
      select p, current_date, sh, t, o
        from unnest(${usage.map((u) => u.projectId)}::uuid[], ${usage.map(() => Math.floor(Math.random() * USAGE_SHARDS))}::int[],
                    ${usage.map((u) => u.total)}::int[], ${usage.map((u) => u.onSharedDomain)}::int[]) as x(p, sh, t, o)
      on conflict (project_id, day, shard) do update
        set sent = s.sent + excluded.sent, shared_domain_sent = s.shared_domain_sent + excluded.shared_domain_sent
    )
    ${jobs.length > 0 ? addJobs(jobs) : sql`select 1`}`.execute(db);
  if (write.attachments.length > 0)
    await db.insertInto('email_attachments').values(write.attachments).execute();
}
