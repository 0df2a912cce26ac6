import type { Readable } from 'node:stream';
import type { Selectable } from 'kysely';
import { enqueue } from '../../db/enqueue.ts';
import type { ImportsTable } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { ValidationError } from '../core/errors.ts';
import { findInProject } from '../core/find.ts';
import { planOrDefault } from '../plans/plans.ts';
import { checkMapping, planColumns } from './import-columns.ts';
import { readCsvHeader, rowsEstimate, rowsOf } from './import-rows.ts';
import { FirstLines } from './import-seen.ts';
import { chunksOf, dropChunks, storeChunks, UploadReader } from './import-upload.ts';
import { type BatchRow, markCompleted, markFailed, newProgress, writeBatch } from './import-writes.ts';
import { checkChoices, type TopicChoice } from './topics.ts';

export const MAX_IMPORT_ROWS = 1_000_000;
const BATCH = 10_000;

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
  'filename',
  'created_by',
  'mapping',
  'list_ids',
  'topics',
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
    filename: row.filename,
    created_by: row.created_by,
    mapping: row.mapping,
    list_ids: row.list_ids,
    topics: row.topics,
  };
}

/** What comes with an upload: the columns' mapping, the lists to join, the file's name and who sent it. */
export interface ImportOptions {
  mapping?: unknown;
  list_ids?: string[];
  /** Choices of topics for every imported contact ([{id, subscription}], topics.ts). */
  topics?: unknown;
  filename?: string;
  by: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The lists an import adds its contacts to: each must be a list of the project (400 naming those that are not). */
async function checkLists(ctx: Pick<DomainContext, 'db'>, projectId: string, ids: string[]) {
  const unique = [...new Set(ids.map((id) => id.trim()).filter((id) => id !== ''))];
  if (unique.length > 100) throw new ValidationError('An import can add its contacts to at most 100 lists');
  const valid = unique.filter((id) => UUID.test(id));
  const found = valid.length
    ? await ctx.db
        .selectFrom('lists')
        .select('id')
        .where('project_id', '=', projectId)
        .where('id', 'in', valid)
        .execute()
    : [];
  const known = new Set(found.map((l) => l.id));
  const missing = unique.filter((id) => !known.has(id));
  if (missing.length > 0)
    throw new ValidationError(
      `No list ${missing.map((id) => `"${id.slice(0, 40)}"`).join(', ')} in this project: create the list first, or leave it out`,
    );
  return unique;
}

/** A CSV file as it arrives: the request's stream, read within the byte limit (413 beyond it). */
export interface CsvUpload {
  format: 'csv';
  stream: Readable;
  limit: number;
  refusal: () => Error;
}

/** The start of a CSV upload checked (its header row against the mapping) before anything is stored. */
async function csvHead(upload: CsvUpload, mapping: Record<string, string> | null) {
  const reader = new UploadReader(upload.stream, upload.limit, upload.refusal);
  try {
    const head = await reader.head();
    if (head.length === 0) throw new ValidationError('The CSV file is empty');
    planColumns(await readCsvHeader(head), mapping);
    return { reader, head };
  } catch (err) {
    reader.drain();
    throw err;
  }
}

/**
 * POST /contacts/import: checks the upload's shape now, imports in the background (GET /imports/{id}).
 * A CSV file is stored in pieces as it arrives, in the transaction that queues its import: a
 * refused or broken upload leaves nothing behind.
 */
export async function startImport(
  ctx: DomainContext,
  projectId: string,
  upload: CsvUpload | { format: 'json'; rows: unknown[] },
  options: ImportOptions,
) {
  const mapping = checkMapping(options.mapping);
  const filename = options.filename?.trim().slice(0, 255) || null;
  let csv: Awaited<ReturnType<typeof csvHead>> | null = null;
  let source: Buffer | null = null;
  if (upload.format === 'csv') csv = await csvHead(upload, mapping);
  else {
    if (mapping)
      throw new ValidationError('A mapping applies to a CSV file: JSON contacts name their fields');
    if (upload.rows.length === 0)
      throw new ValidationError(
        'Send a non-empty JSON array of contacts (or {"contacts": [...]}), or a CSV file as text/csv',
      );
    if (upload.rows.length > MAX_IMPORT_ROWS)
      throw new ValidationError(`An import holds at most ${MAX_IMPORT_ROWS.toLocaleString('en')} rows`);
    source = Buffer.from(JSON.stringify(upload.rows));
  }
  let listIds: string[];
  let topics: TopicChoice[];
  try {
    listIds = await checkLists(ctx, projectId, options.list_ids ?? []);
    topics = options.topics === undefined ? [] : await checkChoices(ctx.db, projectId, options.topics);
  } catch (err) {
    csv?.reader.drain();
    throw err;
  }
  try {
    return await ctx.db.transaction().execute(async (tx) => {
      const row = await tx
        .insertInto('imports')
        .values({
          project_id: projectId,
          format: upload.format,
          source,
          filename,
          created_by: options.by,
          mapping: mapping && JSON.stringify(mapping),
          list_ids: listIds,
          topics: JSON.stringify(topics),
        })
        .returning(STATUS_COLUMNS)
        .executeTakeFirstOrThrow();
      if (csv) {
        // total: the file's rows as its lines count them (a cell spanning lines counts more), so
        // progress reads "n of total"; the final count replaces it when the import ends
        row.total = await storeChunks(tx, row.id, csv.head, csv.reader, MAX_IMPORT_ROWS);
        await tx.updateTable('imports').set({ total: row.total }).where('id', '=', row.id).execute();
      }
      await enqueue(tx, [{ task: 'import_contacts', payload: { import_id: row.id }, maxAttempts: 3 }]);
      return presentImport(row);
    });
  } catch (err) {
    csv?.reader.drain();
    throw err;
  }
}

export async function getImport(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  return presentImport(await findInProject(ctx.db, 'imports', 'Import', projectId, id, STATUS_COLUMNS));
}

/**
 * The batches' writes: up to `writers` at a time (the database uses a core for each; the file is
 * read and checked meanwhile), the first failure ending the import. Each address is in one batch
 * only, so concurrent batches never touch the same contact.
 */
function batchWriter(writers: number, write: (rows: BatchRow[]) => Promise<void>) {
  const inFlight = new Set<Promise<void>>();
  let failure: { err: unknown } | null = null;
  return {
    async add(rows: BatchRow[]) {
      while (inFlight.size >= writers) await Promise.race(inFlight);
      if (failure) throw failure.err;
      const done: Promise<void> = write(rows).then(
        () => void inFlight.delete(done),
        (err) => {
          inFlight.delete(done);
          failure ??= { err };
        },
      );
      inFlight.add(done);
    },
    async end() {
      await Promise.all(inFlight);
      if (failure) throw failure.err;
    },
  };
}

/**
 * The import job: upserts rows in batches of 10,000 (one insert for new addresses, one set-based
 * update for existing ones), two batches at a time when the plan has no contact limit, reports
 * progress after each batch, and records invalid rows with their line numbers without stopping.
 * Re-running a file creates no duplicates: addresses are unique. Within one file, the first row of
 * an address is imported; a later row with the same address is reported by its line ("duplicate
 * of line 2") and skipped, never merged over the first. A CSV file is read a piece at a time.
 */
export async function runImport(ctx: DomainContext, importId: string): Promise<void> {
  const row = await ctx.db.selectFrom('imports').selectAll().where('id', '=', importId).executeTakeFirst();
  if (!row || row.status === 'completed') return;
  const pieces = row.format === 'csv' && !row.source ? chunksOf(ctx.db, importId) : undefined;
  if (!pieces && !row.source) return;
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
    // total: counted at upload for a file in pieces, else from the file's lines
    .set({ status: 'running', ...counts, errors: '[]', total: row.source ? rowsEstimate(row) : row.total })
    .where('id', '=', importId)
    .execute();

  // near a plan's contact limit, batches must see each other's contacts: one at a time
  const writers = planOrDefault(project.plan).contactLimit === 0 ? 2 : 1;
  const writer = batchWriter(writers, (rows) => writeBatch(ctx, importId, row, project, rows, progress));
  let batch: BatchRow[] = [];
  // each address's first line in the file: at most MAX_IMPORT_ROWS entries, compactly
  const seen = new FirstLines();
  try {
    for await (const item of rowsOf(row, pieces)) {
      counts.processed++;
      if (counts.processed > MAX_IMPORT_ROWS) {
        addError(item.line, `an import holds at most ${MAX_IMPORT_ROWS} rows: the rest was not read`);
        break;
      }
      if (item.error || !item.row) addError(item.line, item.error ?? 'unreadable row');
      else {
        const first = seen.firstOrAdd(item.row.email, item.line);
        if (first !== undefined)
          addError(
            item.line,
            `duplicate of line ${first} (${item.row.email}): only the first row of an address is imported`,
          );
        else batch.push({ ...item.row, line: item.line });
      }
      if (batch.length >= BATCH) {
        await writer.add(batch);
        batch = [];
      }
    }
    if (batch.length > 0) await writer.add(batch);
    await writer.end();
    await markCompleted(ctx, importId, progress);
    await dropChunks(ctx.db, importId);
  } catch (err) {
    await writer.end().catch(() => {});
    await markFailed(ctx, importId, progress, err);
  }
}
