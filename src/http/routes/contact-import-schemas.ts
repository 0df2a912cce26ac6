import { Readable } from 'node:stream';
import type { FastifyRequest, FastifySchemaCompiler } from 'fastify';
import { type Static, Type } from 'typebox';
import { tooLarge } from '../../domain/audience/import-upload.ts';
import { MAX_IMPORT_ROWS } from '../../domain/audience/imports.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { ValidationError } from '../../domain/core/errors.ts';
import { authOf } from '../auth.ts';
import { Nullable } from '../schemas.ts';
import { validatorCompiler } from '../validation.ts';

// The schemas of contact imports (POST /v1/contacts/import, its preview, GET /v1/imports/{id}) and
// what reads an import request's query: the mapping and who is importing.

export const ImportSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('import'),
    status: Type.String({ enum: ['queued', 'running', 'completed', 'failed'] }),
    format: Type.String({ enum: ['csv', 'json'] }),
    total: Nullable(
      Type.Integer({
        description:
          "the rows of the file: while it runs, a CSV file's non-empty lines after the header (null for JSON); once ended, the rows read",
      }),
    ),
    processed: Type.Integer(),
    created: Type.Integer(),
    updated: Type.Integer(),
    skipped: Type.Integer(),
    error_count: Type.Integer(),
    errors: Type.Array(Type.Object({ row: Type.Integer(), error: Type.String() }), {
      description: 'the first 1,000 invalid rows, by line number in the file (JSON: position from 1)',
    }),
    failure: Nullable(Type.String()),
    created_at: Type.String(),
    finished_at: Nullable(Type.String()),
    filename: Nullable(Type.String({ description: 'the file name given with the upload' })),
    created_by: Nullable(Type.String({ description: 'who started the import: a person or an API key' })),
    mapping: Nullable(
      Type.Record(Type.String(), Type.String(), { description: 'the mapping given with the upload' }),
    ),
    list_ids: Type.Array(Type.String(), { description: 'the lists the imported contacts join' }),
    topics: Type.Array(
      Type.Object({
        id: Type.String(),
        subscription: Type.Union([Type.Literal('opt_in'), Type.Literal('opt_out')]),
      }),
      { description: 'the topics chosen for every imported contact' },
    ),
  },
  { title: 'ContactImport' },
);
export const ImportPreview = Type.Object(
  {
    object: Type.Literal('import_preview'),
    delimiter: Type.String({ enum: ['comma', 'semicolon', 'tab'] }),
    columns: Type.Array(
      Type.Object({
        name: Type.String({ description: 'the header as in the file' }),
        target: Type.String({ description: 'a contact field, "skip", or "property:<name>"' }),
      }),
    ),
    rows: Type.Array(Type.Array(Type.String()), { description: 'the first rows after the header' }),
  },
  { title: 'ContactImportPreview' },
);
export const PREVIEW_BODY_LIMIT = 1024 * 1024;
export const ImportQuery = Type.Object({
  filename: Type.Optional(
    Type.String({ maxLength: 255, description: 'the file name, recorded with each contact’s consent' }),
  ),
  list_ids: Type.Optional(
    Type.String({
      maxLength: 4000,
      description:
        'comma-separated ids of lists to add every imported contact to (members who left a list stay off it)',
    }),
  ),
  topics: Type.Optional(
    Type.String({
      maxLength: 16_000,
      description:
        'a JSON array of topic choices for every imported contact, e.g. [{"id": "<topic id>", "subscription": "opt_in"}]; each change is recorded as the import’s consent',
    }),
  ),
  mapping: Type.Optional(
    Type.String({
      maxLength: 64_000,
      description:
        'CSV only: a JSON object of column header to target: a contact field (email, first_name, last_name, name, subscribed, unsubscribed, attributes), "skip", or a property name ("property:<name>" or the bare name). Columns it does not name are recognised from their headers.',
    }),
  ),
});

export function mappingOf(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new ValidationError(
      'The mapping must be a JSON object of column header to target, e.g. {"Zip": "skip"}',
    );
  }
}

/** The `topics` query parameter: a JSON array of {id, subscription} (checked by the domain). */
export function topicsOf(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new ValidationError(
      '`topics` must be a JSON array such as [{"id": "<topic id>", "subscription": "opt_in"}]',
    );
  }
}

/** Who starts an import, as each imported contact's consent record names them. */
export async function importerOf(request: FastifyRequest, ctx: DomainContext): Promise<string> {
  const auth = authOf(request);
  if (auth.key) return `the API key "${auth.key.name}"`;
  const account = await ctx.db
    .selectFrom('accounts')
    .select('email')
    .where('id', '=', auth.accountId)
    .executeTakeFirst();
  return account?.email ?? 'a dashboard session';
}

const ROWS = `1 to ${MAX_IMPORT_ROWS.toLocaleString('en')} contacts`;
// Rows are checked one by one when the import runs: a bad row is reported by its position and the
// others are imported, so the schema must not refuse the whole upload for one of them.
const ImportRows = Type.Array(
  Type.Unknown({
    description:
      'a contact, as in CreateContactRequest: email, first_name, last_name, subscribed, properties',
  }),
  { description: ROWS },
);
type ImportRows = Static<typeof ImportRows>;
export const CsvFile = Type.String({
  format: 'binary',
  description: `a header row with an email column (any of its usual names), then ${ROWS}`,
});
export const ImportBody = Type.Unsafe<Readable | ImportRows | { contacts: ImportRows } | undefined>({
  content: {
    'text/csv': { schema: CsvFile },
    'application/csv': { schema: CsvFile },
    'application/json': {
      schema: {
        // an if, not a union: errors then name the field at fault instead of "must be an array"
        if: { type: 'array' },
        // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else, never awaited
        then: ImportRows,
        else: Type.Object({ contacts: ImportRows }),
        description: 'an array of contacts, or {"contacts": [...]}',
      },
    },
  },
});
export const isStream = (body: unknown): body is Readable => body instanceof Readable;

/** A CSV body as the import reads it: the request's stream, refused (413) beyond the route's limit. */
export function csvUpload(request: FastifyRequest, stream: Readable, limit: number) {
  const refusal = () => tooLarge(request.method, request.url);
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > limit) {
    stream.resume();
    throw refusal();
  }
  return { format: 'csv' as const, stream, limit, refusal };
}

/** The CSV file is read where it is imported; the schema validates JSON uploads only. */
export const validateJsonUploads: FastifySchemaCompiler<unknown> = (route) =>
  route.httpPart === 'body' && route.contentType !== 'application/json'
    ? () => true
    : validatorCompiler(route);
