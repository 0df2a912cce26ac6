import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { type Selectable, sql } from 'kysely';
import { Type } from 'typebox';
import type { ImportsTable } from '../../db/schema.ts';
import { getImport, presentImport, startImport } from '../../domain/audience/imports.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { ValidationError } from '../../domain/core/errors.ts';
import { keysetPage } from '../../domain/core/keyset.ts';
import { projectOf } from '../auth.ts';
import { importerOf } from '../routes/contact-import-schemas.ts';
import { typed } from '../schemas.ts';
import { CursorQuery, IdParams, listOf } from './schemas.ts';
import { IMPORT_STATUS } from './vocabulary.ts';

/**
 * Resend's contact imports as Posthorn's (src/domain/audience/imports.ts): the multipart upload's
 * CSV `file` is imported in the background as POST /v1/contacts/import imports it, `column_map`
 * becoming the mapping (`properties` named `property:<key>`), `segments` the lists and `topics`
 * the topic choices. Posthorn updates a contact that already exists (Resend's `upsert`): an
 * explicit `on_conflict: skip` is refused rather than ignored.
 */

const project = { auth: 'project' as const };
/** The most a multipart upload here may hold: it is read whole before the CSV is streamed on. */
const UPLOAD_LIMIT = 64 * 1024 * 1024;

const resendImport = (i: ReturnType<typeof presentImport>) => ({
  object: 'contact_import',
  id: i.id,
  status: IMPORT_STATUS[i.status],
  created_at: i.created_at,
  completed_at: i.finished_at,
  counts: {
    total: i.total ?? 0,
    created: i.created,
    updated: i.updated,
    skipped: i.skipped,
    failed: i.error_count,
  },
});

function json(form: FormData, field: string): unknown {
  const value = form.get(field);
  if (value === null) return undefined;
  try {
    return JSON.parse(String(value));
  } catch {
    throw new ValidationError(`\`${field}\` must be JSON`);
  }
}

/** Resend's column map ({email: "E-mail", properties: {plan: {column: "Plan"}}}) as Posthorn's mapping. */
function mappingOf(value: unknown): Record<string, string> | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value))
    throw new ValidationError('`column_map` must be an object of field to column');
  const map = value as Record<string, unknown>;
  const mapping: Record<string, string> = {};
  for (const field of ['email', 'first_name', 'last_name', 'unsubscribed'])
    if (typeof map[field] === 'string') mapping[map[field] as string] = field;
  const properties = (map.properties ?? {}) as Record<string, { column?: unknown } | string>;
  if (typeof properties !== 'object' || Array.isArray(properties))
    throw new ValidationError('`column_map.properties` must be an object of property to {column}');
  for (const [key, column] of Object.entries(properties)) {
    const name = typeof column === 'string' ? column : column?.column;
    if (typeof name !== 'string')
      throw new ValidationError(`\`column_map.properties.${key.slice(0, 60)}.column\` must be a column name`);
    mapping[name] = `property:${key}`;
  }
  return mapping;
}

async function create(ctx: DomainContext, request: Parameters<typeof importerOf>[0], body: unknown) {
  if (!Buffer.isBuffer(body))
    throw new ValidationError('Send the import as multipart/form-data with the CSV in `file`');
  let form: FormData;
  try {
    form = await new Response(body, {
      headers: { 'content-type': String(request.headers['content-type']) },
    }).formData();
  } catch {
    throw new ValidationError('The multipart body could not be read');
  }
  const file = form.get('file');
  if (!(file instanceof Blob)) throw new ValidationError('`file` is required: the CSV file to import');
  const conflict = form.get('on_conflict');
  if (conflict !== null && conflict !== 'upsert')
    throw new ValidationError(
      '`on_conflict` must be "upsert": Posthorn updates contacts that exist already (their properties merged)',
    );
  const segments = json(form, 'segments');
  if (segments !== undefined && !Array.isArray(segments))
    throw new ValidationError('`segments` must be a JSON array of {id}');
  const listIds = (segments as unknown[] | undefined)?.map((s) =>
    String(typeof s === 'object' && s !== null ? (s as { id?: unknown }).id : s),
  );
  const refusal = () => new ValidationError(`The file is larger than ${UPLOAD_LIMIT} bytes`);
  const created = await startImport(
    ctx,
    projectOf(request),
    {
      format: 'csv',
      stream: Readable.from([Buffer.from(await file.arrayBuffer())]),
      limit: UPLOAD_LIMIT,
      refusal,
    },
    {
      mapping: mappingOf(json(form, 'column_map')),
      list_ids: listIds,
      topics: json(form, 'topics'),
      filename: file instanceof File ? file.name : undefined,
      by: await importerOf(request, ctx),
    },
  );
  return { object: 'contact_import', id: created.id };
}

export async function resendContactImportRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  // the upload is read whole here (this plugin only), then taken apart with the platform's FormData
  instance.addContentTypeParser(
    'multipart/form-data',
    { parseAs: 'buffer', bodyLimit: UPLOAD_LIMIT },
    (_r, body, done) => done(null, body),
  );
  const app = typed(instance);
  app.post(
    '/contacts/imports',
    { config: project, bodyLimit: UPLOAD_LIMIT, schema: { hide: true } },
    async (request, reply) => reply.code(201).send(await create(ctx, request, request.body)),
  );
  app.get(
    '/contacts/imports',
    {
      config: project,
      schema: {
        hide: true,
        querystring: Type.Object({ ...CursorQuery.properties, status: Type.Optional(Type.String()) }),
      },
    },
    async (request) => {
      const { status, ...cursor } = request.query;
      const wanted = Object.keys(IMPORT_STATUS).find((k) => IMPORT_STATUS[k] === status);
      if (status !== undefined && wanted === undefined)
        throw new ValidationError(`\`status\` must be one of ${Object.values(IMPORT_STATUS).join(', ')}`);
      const page = await keysetPage<Selectable<ImportsTable>>(
        ctx.db,
        'imports',
        wanted === undefined
          ? sql<boolean>`project_id = ${projectOf(request)}`
          : sql<boolean>`project_id = ${projectOf(request)} and status = ${wanted}`,
        cursor,
      );
      return listOf(
        page.rows.map((r) => resendImport(presentImport(r as never))),
        page.has_more,
      );
    },
  );
  app.get(
    '/contacts/imports/:id',
    { config: project, schema: { hide: true, params: IdParams } },
    async (request) => resendImport(await getImport(ctx, projectOf(request), request.params.id)),
  );
}
