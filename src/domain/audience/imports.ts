import type { Selectable } from 'kysely';
import { enqueue } from '../../db/enqueue.ts';
import type { ImportsTable } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { ValidationError } from '../core/errors.ts';
import { findInProject } from '../core/find.ts';
import { checkMapping, planColumns } from './import-columns.ts';
import { readCsvHeader, rowsEstimate, rowsOf } from './import-rows.ts';
import { type BatchRow, markCompleted, markFailed, newProgress, writeBatch } from './import-writes.ts';

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
  };
}

/** What comes with an upload: the columns' mapping, the lists to join, the file's name and who sent it. */
export interface ImportOptions {
  mapping?: unknown;
  list_ids?: string[];
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

/** POST /contacts/import: checks the upload's shape now, imports in the background (GET /imports/{id}). */
export async function startImport(
  ctx: DomainContext,
  projectId: string,
  upload: { format: 'csv'; csv: Buffer } | { format: 'json'; rows: unknown[] },
  options: ImportOptions,
) {
  let source: Buffer;
  const mapping = checkMapping(options.mapping);
  const filename = options.filename?.trim().slice(0, 255) || null;
  if (upload.format === 'csv') {
    if (upload.csv.length === 0) throw new ValidationError('The CSV file is empty');
    planColumns(await readCsvHeader(upload.csv), mapping);
    source = upload.csv;
  } else {
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
  const listIds = await checkLists(ctx, projectId, options.list_ids ?? []);
  return ctx.db.transaction().execute(async (tx) => {
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
      })
      .returning(STATUS_COLUMNS)
      .executeTakeFirstOrThrow();
    await enqueue(tx, [{ task: 'import_contacts', payload: { import_id: row.id }, maxAttempts: 3 }]);
    return presentImport(row);
  });
}

export async function getImport(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  return presentImport(await findInProject(ctx.db, 'imports', 'Import', projectId, id, STATUS_COLUMNS));
}

/**
 * The import job: upserts rows in batches of 10,000 (one insert for new addresses, one set-based
 * update for existing ones), reports progress after each batch, and records invalid rows with their
 * line numbers without stopping. Re-running a file creates no duplicates: addresses are unique.
 * Within one file, the first row of an address is imported; a later row with the same address is
 * reported by its line ("duplicate of line 2") and skipped, never merged over the first.
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
    // total: the file's rows as its lines count them (a cell spanning lines counts more), so
    // progress reads "n of total"; the final count replaces it when the import ends
    .set({ status: 'running', ...counts, errors: '[]', total: rowsEstimate(row) })
    .where('id', '=', importId)
    .execute();

  let batch = new Map<string, BatchRow>();
  // each address's first line in the file: at most MAX_IMPORT_ROWS entries
  const seen = new Map<string, number>();
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
        const first = seen.get(item.row.email);
        if (first !== undefined)
          addError(
            item.line,
            `duplicate of line ${first} (${item.row.email}): only the first row of an address is imported`,
          );
        else {
          seen.set(item.row.email, item.line);
          batch.set(item.row.email, { ...item.row, line: item.line });
        }
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
