import { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { type Selectable, sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { enqueue, jobSpecOf } from '../../db/enqueue.ts';
import type { ImportsTable } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { ValidationError } from '../core/errors.ts';
import { findInProject } from '../core/find.ts';
import { type ContactRoom, checkContactLimit, contactIdsByEmail } from './contacts.ts';
import { checkProperties, contactEmail, optionalName, PROPERTY_KEY, type PropertyValue } from './fields.ts';

export const MAX_IMPORT_ROWS = 1_000_000;
const BATCH = 10_000;
const MAX_ERRORS_KEPT = 1_000;
const FIELDS = new Set(['email', 'first_name', 'last_name', 'subscribed']);

type ImportRow = Selectable<ImportsTable>;

/** Every column but the uploaded file, which can be tens of megabytes: status reads never fetch it. */
const STATUS_COLUMNS = [
  'id',
  'project_id',
  'status',
  'format',
  'total',
  'processed',
  'created',
  'updated',
  'skipped',
  'errors',
  'error_count',
  'failure',
  'created_at',
  'finished_at',
] as const satisfies readonly (keyof ImportRow)[];

export function presentImport(row: Omit<ImportRow, 'source'>) {
  return {
    id: row.id,
    object: 'import' as const,
    status: row.status,
    format: row.format,
    total: row.total,
    processed: row.processed,
    created: row.created,
    updated: row.updated,
    skipped: row.skipped,
    error_count: row.error_count,
    errors: row.errors,
    failure: row.failure,
    created_at: row.created_at.toISOString(),
    finished_at: row.finished_at?.toISOString() ?? null,
  };
}

/** The CSV header: `email` is required; first_name, last_name and subscribed are fields; the rest are properties. */
function checkHeader(columns: string[]): string[] {
  const names = columns.map((c) => c.trim());
  if (!names.includes('email'))
    throw new ValidationError(
      'The CSV header row needs an `email` column (and optionally first_name, last_name, subscribed, properties)',
    );
  names.forEach((n) => {
    if (!FIELDS.has(n) && !PROPERTY_KEY.test(n))
      throw new ValidationError(
        `CSV column "${n.slice(0, 60)}" is not a valid property name (letters, digits, _ and -)`,
      );
  });
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup) throw new ValidationError(`CSV column "${dup}" appears twice`);
  return names;
}

/** POST /contacts/import: checks the upload's shape now, imports in the background (GET /imports/{id}). */
export async function startImport(
  ctx: DomainContext,
  projectId: string,
  upload: { format: 'csv'; csv: Buffer } | { format: 'json'; rows: unknown[] },
) {
  let source: Buffer;
  if (upload.format === 'csv') {
    if (upload.csv.length === 0) throw new ValidationError('The CSV file is empty');
    const firstLine = upload.csv
      .subarray(0, 64 * 1024)
      .toString('utf8')
      .split(/\r?\n/)[0];
    const header = await new Promise<string[]>((resolve, reject) =>
      parse(firstLine, { to_line: 1, bom: true }, (err, rows: string[][]) =>
        err
          ? reject(new ValidationError(`The CSV header row could not be read: ${err.message}`))
          : resolve(rows[0] ?? []),
      ),
    );
    checkHeader(header);
    source = upload.csv;
  } else {
    if (upload.rows.length === 0)
      throw new ValidationError(
        'Send a non-empty JSON array of contacts (or {"contacts": [...]}), or a CSV file as text/csv',
      );
    if (upload.rows.length > MAX_IMPORT_ROWS)
      throw new ValidationError(`An import holds at most ${MAX_IMPORT_ROWS.toLocaleString('en')} rows`);
    source = Buffer.from(JSON.stringify(upload.rows));
  }
  return ctx.db.transaction().execute(async (tx) => {
    const row = await tx
      .insertInto('imports')
      .values({ project_id: projectId, format: upload.format, source })
      .returning(STATUS_COLUMNS)
      .executeTakeFirstOrThrow();
    await enqueue(tx, [{ task: 'import_contacts', payload: { import_id: row.id }, maxAttempts: 3 }]);
    return presentImport(row);
  });
}

export async function getImport(ctx: DomainContext, projectId: string, id: string) {
  return presentImport(await findInProject(ctx.db, 'imports', 'Import', projectId, id, STATUS_COLUMNS));
}

interface CleanRow {
  email: string;
  first_name: string | null;
  last_name: string | null;
  subscribed: boolean | null;
  properties: Record<string, PropertyValue>;
}

function bool(value: string): boolean | null {
  const v = value.trim().toLowerCase();
  if (v === '') return null;
  if (['true', 'yes', '1', 'y'].includes(v)) return true;
  if (['false', 'no', '0', 'n'].includes(v)) return false;
  throw new ValidationError(`subscribed must be true or false, got "${value.slice(0, 30)}"`);
}

function fromCsv(header: string[], cells: string[]): CleanRow {
  if (cells.some((c) => c.includes('\u0000'))) throw new ValidationError('a cell contains a NUL character');
  if (cells.length !== header.length)
    throw new ValidationError(`expected ${header.length} columns, got ${cells.length}`);
  const row: CleanRow = { email: '', first_name: null, last_name: null, subscribed: null, properties: {} };
  header.forEach((name, i) => {
    const cell = cells[i];
    if (name === 'email') row.email = contactEmail(cell);
    else if (name === 'first_name' || name === 'last_name') row[name] = optionalName(cell, name) ?? null;
    else if (name === 'subscribed') row.subscribed = bool(cell);
    else if (cell !== '') row.properties[name] = cell;
  });
  return row;
}

function fromJson(value: unknown): CleanRow {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new ValidationError('a row must be a contact object');
  const v = value as Record<string, unknown>;
  if (v.subscribed !== undefined && typeof v.subscribed !== 'boolean')
    throw new ValidationError('`subscribed` must be true or false');
  return {
    email: contactEmail(v.email),
    first_name: optionalName(v.first_name, 'first_name') ?? null,
    last_name: optionalName(v.last_name, 'last_name') ?? null,
    subscribed: (v.subscribed as boolean | undefined) ?? null,
    properties: checkProperties(v.properties) as Record<string, PropertyValue>,
  };
}

async function* rowsOf(row: ImportRow): AsyncGenerator<{ line: number; row?: CleanRow; error?: string }> {
  const source = row.source as Buffer;
  if (row.format === 'json') {
    const items = JSON.parse(source.toString('utf8')) as unknown[];
    for (let i = 0; i < items.length; i++) {
      try {
        yield { line: i + 1, row: fromJson(items[i]) };
      } catch (err) {
        yield { line: i + 1, error: (err as Error).message };
      }
    }
    return;
  }
  const parser = Readable.from([source]).pipe(
    parse({ bom: true, relax_column_count: true, skip_empty_lines: true, info: true }),
  );
  let header: string[] | null = null;
  for await (const record of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
    if (!header) {
      header = checkHeader(record.record);
      continue;
    }
    const line = record.info.lines;
    try {
      yield { line, row: fromCsv(header, record.record) };
    } catch (err) {
      yield { line, error: (err as Error).message };
    }
  }
}

type BatchRow = CleanRow & { line: number };
type ImportProject = Parameters<typeof checkContactLimit>[1];

/** The counts and kept errors of one run, written to the import's row after each batch. */
interface ImportProgress {
  counts: { processed: number; created: number; updated: number; skipped: number; error_count: number };
  errors: { row: number; error: string }[];
  addError: (line: number, error: string) => void;
}

function newProgress(): ImportProgress {
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
function upsertParts(pid: string, rows: BatchRow[]) {
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
        insert into contact_consents (contact_id, project_id, status, source)
        select i.id, ${pid}::uuid, case when i.subscribed then 'granted' else 'withdrawn' end, 'import'
          from ins i join x on x.email = i.email where x.subscribed is not null
        union all
        select k.contact_id, ${pid}::uuid, case when k.subscribed then 'granted' else 'withdrawn' end, 'import'
          from known k where k.subscribed is not null and k.subscribed <> k.was
      ), announced as (
        select count(*) as n from graphile_worker.add_jobs(array(
          select ${jobSpecOf('audience_event', sql`json_build_object('type', 'contact.created', 'project_id', ${pid}::text, 'contact_ids', a.ids)`)}
            from (select json_agg(id) as ids from ins) a where a.ids is not null)))`;
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
async function writeBatch(
  ctx: DomainContext,
  importId: string,
  row: ImportRow,
  project: ImportProject,
  rows: BatchRow[],
  progress: ImportProgress,
) {
  const pid = row.project_id;
  // every row counted as new: near the limit, the second statement inserts unknown rows up to `fits`
  const room = await checkContactLimit(ctx.db, project, rows.length, { partial: true });
  const parts = upsertParts(pid, rows);
  if (room.fits === rows.length) await upsertAll(ctx.db, rows, parts, progress);
  else await upsertUpToRoom(ctx.db, pid, rows, parts, room, progress);
  await ctx.db
    .updateTable('imports')
    .set({ ...progress.counts, errors: JSON.stringify(progress.errors) })
    .where('id', '=', importId)
    .execute();
}

async function markCompleted(ctx: DomainContext, importId: string, progress: ImportProgress) {
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

async function markFailed(ctx: DomainContext, importId: string, progress: ImportProgress, err: unknown) {
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

/**
 * The import job: upserts rows in batches of 10,000 (one insert for new addresses, one set-based
 * update for existing ones), reports progress after each batch, and records invalid rows with their
 * line numbers without stopping. Re-running a file creates no duplicates: addresses are unique.
 */
export async function runImport(ctx: DomainContext, importId: string): Promise<void> {
  const row = await ctx.db.selectFrom('imports').selectAll().where('id', '=', importId).executeTakeFirst();
  if (!row || row.status === 'completed' || !row.source) return;
  const project = await ctx.db
    .selectFrom('projects as p')
    .innerJoin('workspaces as w', 'w.id', 'p.workspace_id')
    .select(['p.id', 'w.plan'])
    .where('p.id', '=', row.project_id)
    .executeTakeFirstOrThrow();
  const progress = newProgress();
  const { counts, addError } = progress;
  await ctx.db
    .updateTable('imports')
    .set({ status: 'running', ...counts, errors: '[]' })
    .where('id', '=', importId)
    .execute();

  let batch = new Map<string, BatchRow>();
  // the database writes one batch while the next is read and checked; writes stay in file order
  let writing: Promise<void> = Promise.resolve();
  const flush = async () => {
    await writing;
    if (batch.size === 0) return;
    const rows = [...batch.values()];
    batch = new Map();
    writing = writeBatch(ctx, importId, row, project, rows, progress);
    writing.catch(() => {}); // handled: the next flush awaits it and fails the import
  };

  try {
    for await (const item of rowsOf(row)) {
      counts.processed++;
      if (counts.processed > MAX_IMPORT_ROWS) {
        addError(item.line, `an import holds at most ${MAX_IMPORT_ROWS} rows: the rest was not read`);
        break;
      }
      if (item.error || !item.row) addError(item.line, item.error ?? 'unreadable row');
      else {
        // the same address twice in a batch: the later row wins (and the earlier counts as updated)
        if (batch.has(item.row.email)) counts.updated++;
        batch.set(item.row.email, { ...item.row, line: item.line });
      }
      if (batch.size >= BATCH) await flush();
    }
    await flush();
    await writing;
    await markCompleted(ctx, importId, progress);
  } catch (err) {
    await markFailed(ctx, importId, progress, err);
  }
}
