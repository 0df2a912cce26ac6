import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { jobSpecOf } from '../../db/enqueue.ts';
import type { DomainContext } from '../core/context.ts';
import { ValidationError } from '../core/errors.ts';
import { type ContactRoom, checkContactLimit, contactIdsByEmail } from './contacts.ts';
import type { CleanRow } from './import-rows.ts';
import type { AudienceEvent } from './triggers.ts';

/**
 * Writing an import: each batch of checked rows upserted into the project's contacts in one
 * statement (with each new contact's consent recorded as this import's, a change of subscription
 * the file states likewise, the memberships of the import's lists, and the `contact.created` and
 * `list.joined` announcements), within the plan's
 * contact limit, and the import's counts and kept errors after each batch and at the end.
 */

const MAX_ERRORS_KEPT = 1_000;

export type BatchRow = CleanRow & { line: number };
export type ImportProject = Parameters<typeof checkContactLimit>[1];

/** The counts and kept errors of one run, written to the import's row after each batch. */
export interface ImportProgress {
  counts: { processed: number; created: number; updated: number; skipped: number; error_count: number };
  errors: { row: number; error: string }[];
  addError: (line: number, error: string) => void;
}

/** A run's progress from zero: at most MAX_ERRORS_KEPT errors are kept, every one is counted. */
export function newProgress(): ImportProgress {
  const counts = { processed: 0, created: 0, updated: 0, skipped: 0, error_count: 0 };
  const errors: { row: number; error: string }[] = [];
  const addError = (line: number, error: string) => {
    counts.error_count++;
    counts.skipped++;
    if (errors.length < MAX_ERRORS_KEPT) errors.push({ row: line, error });
  };
  return { counts, errors, addError };
}

/**
 * The parts both upsert statements share: the rows (x), the insert of new contacts (ins) from a source,
 * the contacts that existed (known) among a source, and then the update of the known ones, the
 * consent history (a subscription the file states, on a new contact or as a change) and the
 * announcement of the new contacts.
 */
/** What each imported contact's consent record says of the import: which file, by whom. */
export function importNote(imp: { id: string; filename: string | null; created_by: string | null }) {
  const file = imp.filename ? `"${imp.filename}"` : 'a file';
  return `Imported from ${file}${imp.created_by ? ` by ${imp.created_by}` : ''} (import ${imp.id})`;
}

/** The import's target: its project, and what its contacts' consent and lists take from it. */
export interface ImportTarget {
  id: string;
  project_id: string;
  filename: string | null;
  created_by: string | null;
  list_ids: string[];
  /** Topics chosen for every imported contact: each change recorded as the import's consent. */
  topics: { id: string; subscription: 'opt_in' | 'opt_out' }[];
}

function upsertParts(imp: ImportTarget, rows: BatchRow[]) {
  const pid = imp.project_id;
  const note = importNote(imp);
  const input = sql`x as (
        select * from json_to_recordset(${JSON.stringify(rows)}::json)
          as x(email text, first_name text, last_name text, properties jsonb, subscribed boolean, line int))`;
  const insert = (source: string) => sql`ins as (
        insert into contacts (project_id, email, first_name, last_name, properties, subscribed)
        select ${pid}, email, first_name, last_name, coalesce(properties, '{}'), coalesce(subscribed, true)
          from ${sql.table(source)}
        on conflict (project_id, email) do nothing
        returning id, email, subscribed)`;
  const known = (source: string) => sql`known as materialized (
        select s.*, c.id as contact_id, c.subscribed as was
          from ${sql.table(source)} s join contacts c on c.project_id = ${pid} and c.email = s.email)`;
  const updateConsentAnnounce = sql`upd as (
        update contacts c set first_name = coalesce(k.first_name, c.first_name),
                              last_name = coalesce(k.last_name, c.last_name),
                              properties = c.properties || coalesce(k.properties, '{}'),
                              subscribed = coalesce(k.subscribed, c.subscribed),
                              updated_at = now()
          from known k where c.id = k.contact_id
        returning c.email
      ), consented as (
        insert into contact_consents (contact_id, project_id, status, source, text_shown)
        select i.id, ${pid}::uuid, case when i.subscribed then 'granted' else 'withdrawn' end, 'import', ${note}
          from ins i
        union all
        select k.contact_id, ${pid}::uuid, case when k.subscribed then 'granted' else 'withdrawn' end, 'import', ${note}
          from known k where k.subscribed is not null and k.subscribed <> k.was
      ), joined as (
        insert into list_members (list_id, contact_id)
        select l.id, c.id
          from lists l, (select id from ins union all select contact_id from known) c
         where l.project_id = ${pid} and l.id = any(${imp.list_ids}::uuid[])
        on conflict (list_id, contact_id) do nothing
        returning list_id, contact_id
      ), chose as materialized (
        select c.id as contact_id, t.id as topic_id, t.subscription = 'opt_in' as subscribed,
               coalesce(ct.subscribed, tp.default_subscription = 'opt_in') as was
          from (select id from ins union all select contact_id from known) c
         cross join json_to_recordset(${JSON.stringify(imp.topics)}::json) as t(id uuid, subscription text)
          join topics tp on tp.id = t.id and tp.project_id = ${pid}
          left join contact_topics ct on ct.contact_id = c.id and ct.topic_id = t.id
      ), chosen as (
        insert into contact_topics (contact_id, topic_id, subscribed)
        select contact_id, topic_id, subscribed from chose
        on conflict (contact_id, topic_id) do update set subscribed = excluded.subscribed, updated_at = now()
      ), topic_consented as (
        insert into contact_consents (contact_id, project_id, status, source, text_shown, topic_id)
        select contact_id, ${pid}::uuid, case when subscribed then 'granted' else 'withdrawn' end, 'import', ${note}, topic_id
          from chose where subscribed <> was
      ), announced as (
        select count(*) as n from graphile_worker.add_jobs(array(
          select ${jobSpecOf('audience_event', sql<AudienceEvent>`json_build_object('type', 'contact.created', 'project_id', ${pid}::text, 'contact_ids', a.ids)`)}
            from (select json_agg(id) as ids from ins) a where a.ids is not null
          union all
          select ${jobSpecOf('audience_event', sql<AudienceEvent>`json_build_object('type', 'list.joined', 'project_id', ${pid}::text, 'list_id', j.list_id, 'contact_ids', j.ids)`)}
            from (select list_id, json_agg(contact_id) as ids from joined group by list_id) j
          union all
          select ${jobSpecOf('audience_event', sql<AudienceEvent>`json_build_object('type', 'contact.topic_changed', 'project_id', ${pid}::text, 'topic_id', g.topic_id, 'subscribed', g.subscribed, 'contact_ids', g.ids)`)}
            from (select topic_id, subscribed, json_agg(contact_id) as ids from chose where subscribed <> was
                   group by topic_id, subscribed) g)))`;
  return { input, insert, known, updateConsentAnnounce };
}

type UpsertParts = ReturnType<typeof upsertParts>;

/**
 * Every row fits: insert first (one index probe per new address), then update only the rows
 * whose insert found the address taken (none in a file of new contacts).
 */
async function upsertAll(db: Db, rows: BatchRow[], parts: UpsertParts, progress: ImportProgress) {
  const { input, insert, known, updateConsentAnnounce } = parts;
  const { rows: result } = await sql<{ inserted: string }>`
        with ${input}, ${insert('x')},
        taken as materialized (select x.* from x where not exists (select 1 from ins where ins.email = x.email)),
        ${known('taken')}, ${updateConsentAnnounce}
        select (select count(*) from ins) as inserted, (select n from announced) as announced`.execute(db);
  // a row neither inserted nor updated was created meanwhile by another writer: it exists, so
  // it counts as updated
  const inserted = Number(result[0].inserted);
  progress.counts.created += inserted;
  progress.counts.updated += rows.length - inserted;
}

/** Near the plan's limit: update the known addresses, insert new ones only up to the room left. */
async function upsertUpToRoom(
  db: Db,
  pid: string,
  rows: BatchRow[],
  parts: UpsertParts,
  room: ContactRoom,
  progress: ImportProgress,
) {
  const { input, insert, known, updateConsentAnnounce } = parts;
  const { rows: result } = await sql<{ updated: string[] | null; inserted: string[] | null }>`
        with ${input}, ${known('x')},
        fresh as (select x.* from x where not exists (select 1 from known k where k.email = x.email)
                   order by x.line limit ${room.fits}),
        ${insert('fresh')}, ${updateConsentAnnounce}
        select (select array_agg(email) from upd) as updated, (select array_agg(email) from ins) as inserted,
               (select n from announced) as announced`.execute(db);
  const updated = new Set(result[0].updated ?? []);
  const inserted = new Set(result[0].inserted ?? []);
  const left = rows.filter((r) => !inserted.has(r.email) && !updated.has(r.email));
  // of the rows left out, those another writer created meanwhile exist: they count as updated,
  // as in the other statement; the rest found no room
  const meanwhile = await contactIdsByEmail(
    db,
    pid,
    left.map((r) => r.email),
  );
  for (const r of rows) {
    if (inserted.has(r.email)) progress.counts.created++;
    else if (updated.has(r.email) || meanwhile.has(r.email)) progress.counts.updated++;
    else
      progress.addError(
        r.line,
        `${r.email}: the plan's limit of ${room.limit} contacts per project is reached`,
      );
  }
}

/** Upserts one batch of rows into the import's project, then records the progress on the import. */
export async function writeBatch(
  ctx: DomainContext,
  importId: string,
  row: ImportTarget,
  project: ImportProject,
  rows: BatchRow[],
  progress: ImportProgress,
) {
  const pid = row.project_id;
  // every row counted as new: near the limit, the second statement inserts unknown rows up to `fits`
  const room = await checkContactLimit(ctx.db, project, rows.length, { partial: true });
  const parts = upsertParts(row, rows);
  if (room.fits === rows.length) await upsertAll(ctx.db, rows, parts, progress);
  else await upsertUpToRoom(ctx.db, pid, rows, parts, room, progress);
  await ctx.db
    .updateTable('imports')
    .set({ ...progress.counts, errors: JSON.stringify(progress.errors) })
    .where('id', '=', importId)
    .execute();
}

/** Ends a run: the import `completed` with its counts, its file dropped. */
export async function markCompleted(
  ctx: Pick<DomainContext, 'db'>,
  importId: string,
  progress: ImportProgress,
) {
  const { counts, errors } = progress;
  await ctx.db
    .updateTable('imports')
    .set({
      status: 'completed',
      total: counts.processed,
      ...counts,
      errors: JSON.stringify(errors),
      source: null,
      finished_at: new Date(),
    })
    .where('id', '=', importId)
    .execute();
}

/** Ends a run that could not go on: the import `failed`, with why and the counts so far. */
export async function markFailed(
  ctx: Pick<DomainContext, 'db'>,
  importId: string,
  progress: ImportProgress,
  err: unknown,
) {
  const { counts, errors } = progress;
  const message =
    err instanceof ValidationError ? err.message : `the file could not be read: ${(err as Error).message}`;
  await ctx.db
    .updateTable('imports')
    .set({
      status: 'failed',
      failure: message,
      ...counts,
      errors: JSON.stringify(errors),
      finished_at: new Date(),
    })
    .where('id', '=', importId)
    .execute();
}
