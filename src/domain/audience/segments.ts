import { type Selectable, sql } from 'kysely';
import type { Tx } from '../../db/database.ts';
import type { SegmentsTable } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError, ValidationError } from '../core/errors.ts';
import { findInProject } from '../core/find.ts';
import { checkDescription, checkName } from './fields.ts';
import { type DefinitionInput, type Group, validateDefinition } from './segment-language.ts';
import { compileCount, compileDefinition } from './segment-sql.ts';

type SegmentRow = Selectable<SegmentsTable>;

function present(row: SegmentRow) {
  return {
    id: row.id,
    object: 'segment' as const,
    name: row.name,
    description: row.description,
    definition: row.definition,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

async function findSegment(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  id: string,
): Promise<SegmentRow> {
  return findInProject(ctx.db, 'segments', 'Segment', projectId, id);
}

/** Validates a definition and checks that the lists and topics it names are this project's (else 400). */
async function checkDefinition(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  definition: unknown,
): Promise<Group> {
  if (definition === undefined)
    throw new ValidationError('`definition` is required: {"all": [...]} or {"any": [...]}');
  const checked = validateDefinition(definition);
  if (checked.listIds.length > 0) {
    const found = await ctx.db
      .selectFrom('lists')
      .select('id')
      .where('project_id', '=', projectId)
      .where('id', 'in', checked.listIds)
      .execute();
    const missing = checked.listIds.filter((id) => !found.some((f) => f.id === id));
    if (missing.length > 0)
      throw new ValidationError(
        `The definition names list ${missing[0]}, which does not exist in this project`,
      );
  }
  if (checked.topicIds.length > 0) {
    const found = await ctx.db
      .selectFrom('topics')
      .select('id')
      .where('project_id', '=', projectId)
      .where('id', 'in', checked.topicIds)
      .execute();
    const missing = checked.topicIds.filter((id) => !found.some((f) => f.id === id));
    if (missing.length > 0)
      throw new ValidationError(
        `The definition names topic ${missing[0]}, which does not exist in this project`,
      );
  }
  return checked.definition;
}

const uniqueName = (err: unknown, name: string) => {
  if ((err as { code?: string }).code === '23505')
    throw new ConflictError(`A segment named "${name}" already exists`);
  throw err;
};

/** A segment as the API receives it; the definition's rules are the condition language's. */
export interface SegmentInput {
  name: string;
  description?: string | null;
  definition: DefinitionInput;
}

export async function createSegment(ctx: Pick<DomainContext, 'db'>, projectId: string, body: SegmentInput) {
  const name = checkName(body.name);
  const description = checkDescription(body.description) ?? null;
  const definition = await checkDefinition(ctx, projectId, body.definition);
  const row = await ctx.db
    .insertInto('segments')
    .values({ project_id: projectId, name, description, definition: JSON.stringify(definition) })
    .returningAll()
    .executeTakeFirstOrThrow()
    .catch((err) => uniqueName(err, name));
  return present(row);
}

export async function listSegments(ctx: Pick<DomainContext, 'db'>, projectId: string) {
  const rows = await ctx.db
    .selectFrom('segments')
    .selectAll()
    .where('project_id', '=', projectId)
    .orderBy('name')
    .execute();
  return { data: rows.map(present) };
}

export async function getSegment(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  return present(await findSegment(ctx, projectId, id));
}

export async function updateSegment(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  id: string,
  body: Partial<SegmentInput>,
) {
  const current = await findSegment(ctx, projectId, id);
  const name = body.name === undefined ? undefined : checkName(body.name);
  const description = checkDescription(body.description);
  const definition =
    body.definition === undefined ? undefined : await checkDefinition(ctx, projectId, body.definition);
  const row = await ctx.db
    .updateTable('segments')
    .set({
      ...(name !== undefined ? { name } : {}),
      ...(description !== undefined ? { description } : {}),
      ...(definition !== undefined ? { definition: JSON.stringify(definition) } : {}),
      updated_at: new Date(),
    })
    .where('id', '=', current.id)
    .returningAll()
    .executeTakeFirstOrThrow()
    .catch((err) => uniqueName(err, name ?? current.name));
  return present(row);
}

export async function deleteSegment(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  const current = await findSegment(ctx, projectId, id);
  await ctx.db.deleteFrom('segments').where('id', '=', current.id).execute();
}

/** The segment's condition over `contacts`, computed on read (membership is never stored). */
export async function segmentCondition(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  const row = await findSegment(ctx, projectId, id);
  return compileDefinition(projectId, row.definition as Group);
}

/**
 * Runs segment queries with the settings they are fast with: enough memory for the per-contact
 * aggregates of event conditions to stay in one in-memory hash, and no parallel workers (the
 * aggregate under an IN is not parallel-aware: every worker would build the whole of it again;
 * serial measured 40% faster over 1M contacts and 10M events).
 */
export function withSegmentSettings<T>(ctx: DomainContext, fn: (db: Tx) => Promise<T>): Promise<T> {
  return ctx.db.transaction().execute(async (tx) => {
    await sql`set local work_mem = '64MB'; set local max_parallel_workers_per_gather = 0`.execute(tx);
    return fn(tx);
  });
}

/** How many contacts the segment holds right now. */
export async function countSegment(ctx: DomainContext, projectId: string, id: string) {
  const row = await findSegment(ctx, projectId, id);
  const query = compileCount(projectId, row.definition as Group);
  const { rows } = await withSegmentSettings(ctx, (db) => query.execute(db));
  return { object: 'segment_count' as const, segment_id: id, count: Number(rows[0].n) };
}

/**
 * How many contacts a definition matches now, without saving it: the dashboard's live count while
 * a segment is edited. The definition is checked as a saved one is (its lists must be this project's).
 */
export async function previewSegmentCount(ctx: DomainContext, projectId: string, definition: unknown) {
  const checked = await checkDefinition(ctx, projectId, definition);
  const query = compileCount(projectId, checked);
  const { rows } = await withSegmentSettings(ctx, (db) => query.execute(db));
  return { object: 'segment_preview' as const, count: Number(rows[0].n) };
}
