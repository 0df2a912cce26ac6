import type { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import {
  createContact,
  deleteContact,
  getContact,
  listContacts,
  updateContact,
} from '../../domain/audience/contacts.ts';
import { listContactEvents } from '../../domain/audience/events.ts';
import { previewCsv } from '../../domain/audience/import-rows.ts';
import { readUpload } from '../../domain/audience/import-upload.ts';
import { getImport, MAX_IMPORT_ROWS, startImport } from '../../domain/audience/imports.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { ValidationError } from '../../domain/core/errors.ts';
import { projectFactsOf, projectOf } from '../auth.ts';
import { errors, Nullable, PageQuery, page, pageOf, typed } from '../schemas.ts';
import {
  CsvFile,
  csvUpload,
  ImportBody,
  ImportPreview,
  ImportQuery,
  ImportSchema,
  importerOf,
  isStream,
  mappingOf,
  PREVIEW_BODY_LIMIT,
  topicsOf,
  validateJsonUploads,
} from './contact-import-schemas.ts';
import { EventSchema, EventsQuery, PROPERTIES_HELP, PropertyValue } from './events.ts';

const Value = Type.Union([Type.String(), Type.Number(), Type.Boolean()]);
export const ContactSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('contact'),
    email: Type.String(),
    first_name: Nullable(Type.String()),
    last_name: Nullable(Type.String()),
    properties: Type.Record(Type.String(), Value),
    subscribed: Type.Boolean({
      description: 'marketing consent: false means unsubscribed from all marketing',
    }),
    lists: Type.Array(Type.String(), { description: 'ids of the lists the contact is subscribed to' }),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { title: 'Contact' },
);
const ConsentEntry = Type.Object(
  {
    status: Type.String({ enum: ['granted', 'withdrawn'] }),
    source: Nullable(Type.String()),
    ip: Nullable(Type.String()),
    text: Nullable(Type.String()),
    topic_id: Nullable(Type.String({ description: 'the topic the change is about; null: all marketing' })),
    created_at: Type.String(),
  },
  { title: 'ConsentEntry' },
);
const ContactDetail = Type.Object(
  { ...ContactSchema.properties, consent_history: Type.Array(ConsentEntry) },
  { title: 'ContactWithConsent' },
);

const Name = (field: string) =>
  Type.Optional(Nullable(Type.String({ maxLength: 200, description: `${field}; blank or null clears it` })));
// one flat union: a nested one would hide from the error message which types are accepted
const PropertyChange = Type.Union([...PropertyValue.anyOf, Type.Null()]);
const Consent = Type.Object(
  {
    status: Type.Enum(['granted', 'withdrawn'], { type: 'string' }),
    source: Type.Optional(
      Nullable(Type.String({ maxLength: 200, description: 'where it was given, e.g. "signup form"' })),
    ),
    ip: Type.Optional(Nullable(Type.String({ maxLength: 64, description: 'the address it came from' }))),
    text: Type.Optional(Nullable(Type.String({ maxLength: 5000, description: 'the wording shown' }))),
  },
  {
    title: 'Consent',
    description: 'recorded as history, never overwritten; sets `subscribed` (granted = true)',
  },
);
const TopicChoices = Type.Optional(
  Type.Array(
    Type.Object({
      id: Type.String({ description: 'topic id' }),
      subscription: Type.Union([Type.Literal('opt_in'), Type.Literal('opt_out')]),
    }),
    {
      minItems: 1,
      maxItems: 100,
      description: 'choices of topics (recorded as consent, source api); topics not named keep theirs',
    },
  ),
);
const CreateContactRequest = Type.Object(
  {
    email: Type.String({ description: 'unique per project, compared in any case' }),
    first_name: Name('first name'),
    last_name: Name('last name'),
    properties: Type.Optional(
      Type.Record(Type.String(), PropertyValue, { maxProperties: 100, description: PROPERTIES_HELP }),
    ),
    subscribed: Type.Optional(
      Type.Boolean({ description: 'marketing consent; default true, or as `consent` says' }),
    ),
    consent: Type.Optional(Consent),
    topics: TopicChoices,
  },
  { title: 'CreateContactRequest' },
);
const UpdateContactRequest = Type.Object(
  {
    email: Type.Optional(Type.String({ description: 'a new address, unique per project' })),
    first_name: Name('first name'),
    last_name: Name('last name'),
    properties: Type.Optional(
      Type.Record(Type.String(), PropertyChange, {
        maxProperties: 100,
        description: `merged into the contact's properties; null removes one; ${PROPERTIES_HELP}`,
      }),
    ),
    subscribed: Type.Optional(
      Type.Boolean({ description: 'false unsubscribes from all marketing (recorded as consent)' }),
    ),
    consent: Type.Optional(Consent),
    topics: TopicChoices,
  },
  { title: 'UpdateContactRequest' },
);
const Params = Type.Object({ id: Type.String({ description: 'contact id or email address' }) });
const IMPORT_BODY_LIMIT = 256 * 1024 * 1024;

/** Contacts, their events and bulk imports. */
export async function contactRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const config = { auth: 'project' as const };
  const tags = ['contacts'];
  // imports take CSV as it is, as a stream (read within each route's limit where it is used, so
  // a large file is never held whole); this parser is scoped to this file's routes, and the others
  // take JSON only (415, as for any other type)
  app.addContentTypeParser(['text/csv', 'application/csv'], (req, payload, done) =>
    /\/contacts\/import(\/preview)?$/.test(req.routeOptions.url ?? '')
      ? done(null, payload)
      : done(Object.assign(new Error('CSV goes to the import'), { code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE' })),
  );

  app.get(
    '/contacts',
    {
      config,
      schema: {
        tags,
        summary: 'List contacts, newest first',
        operationId: 'listContacts',
        querystring: Type.Object({
          ...PageQuery.properties,
          email: Type.Optional(Type.String({ description: 'exact address, any case' })),
          search: Type.Optional(
            Type.String({
              maxLength: 320,
              description: 'the start of the address, any case (e.g. `ann` or `ann@ex`)',
            }),
          ),
          list: Type.Optional(
            Type.String({ description: 'list id: its subscribed and unsubscribed members' }),
          ),
          segment: Type.Optional(Type.String({ description: 'segment id: its members now' })),
          subscribed: Type.Optional(Type.Boolean()),
          created_after: Type.Optional(Type.String({ description: 'ISO 8601 date' })),
          created_before: Type.Optional(Type.String({ description: 'ISO 8601 date' })),
        }),
        response: { 200: page(ContactSchema), ...errors(400, 401, 404) },
      },
    },
    async (request) => listContacts(ctx, projectOf(request), pageOf(request.query)),
  );
  app.post(
    '/contacts',
    {
      config,
      schema: {
        tags,
        summary: 'Create a contact',
        operationId: 'createContact',
        description:
          'A second contact with the same address (compared case-insensitively) is 409; past the plan’s contact limit, 402.',
        body: CreateContactRequest,
        response: { 200: ContactSchema, ...errors(400, 401, 402, 409) },
      },
    },
    async (request) => createContact(ctx, await projectFactsOf(request, ctx), request.body),
  );
  app.get(
    '/contacts/:id',
    {
      config,
      schema: {
        tags,
        summary: 'One contact by id or email, with its consent history',
        operationId: 'getContact',
        params: Params,
        response: { 200: ContactDetail, ...errors(401, 404) },
      },
    },
    async (request) => getContact(ctx, projectOf(request), request.params.id),
  );
  app.patch(
    '/contacts/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Update a contact: names, email, properties (merged), subscription with consent',
        operationId: 'updateContact',
        params: Params,
        body: UpdateContactRequest,
        response: { 200: ContactDetail, ...errors(400, 401, 404, 409) },
      },
    },
    async (request) => updateContact(ctx, projectOf(request), request.params.id, request.body),
  );
  app.delete(
    '/contacts/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete a contact with its list memberships and events',
        operationId: 'deleteContact',
        params: Params,
        response: { 204: Type.Null(), ...errors(401, 404) },
      },
    },
    async (request, reply) => {
      await deleteContact(ctx, projectOf(request), request.params.id);
      return reply.code(204).send();
    },
  );
  app.get(
    '/contacts/:id/events',
    {
      config,
      schema: {
        tags,
        summary: 'The events tracked for one contact, newest first',
        operationId: 'listContactEvents',
        params: Params,
        querystring: EventsQuery,
        response: { 200: page(EventSchema), ...errors(400, 401, 404) },
      },
    },
    async (request) => listContactEvents(ctx, projectOf(request), request.params.id, pageOf(request.query)),
  );

  app.post(
    '/contacts/import',
    {
      config,
      bodyLimit: IMPORT_BODY_LIMIT,
      validatorCompiler: validateJsonUploads,
      schema: {
        tags,
        summary: 'Import contacts in bulk, in the background',
        operationId: 'importContacts',
        description: `Send a CSV file (\`Content-Type: text/csv\`; comma, semicolon or tab; a header row, matched without regard to case or spacing: \`Email\`, \`E-mail\`, \`Email Address\`… hold the address, \`First Name\`, \`Last Name\`, \`Name\`, \`Subscribed\`/\`Status\`, \`Unsubscribed\` and listmonk's \`attributes\` map to fields, every other column becomes a property; \`mapping\` decides otherwise) or a JSON array of contacts (or {"contacts": [...]}), up to ${MAX_IMPORT_ROWS.toLocaleString('en')} rows and 256 MB. Answers at once with the import; follow its progress with GET /v1/imports/{id}. Existing addresses are updated (properties merged), so importing the same file twice creates no duplicates; within one file, the first row of an address is imported and later ones are reported by line and skipped. Each new contact's consent is recorded as this import's (file, who, when); \`list_ids\` adds the contacts to lists. Invalid rows are reported with their line numbers; the others are imported.`,
        querystring: ImportQuery,
        body: ImportBody,
        response: { 200: ImportSchema, ...errors(400, 401, 413, 415) },
      },
    },
    async (request) => {
      const body = request.body;
      const upload = isStream(body)
        ? csvUpload(request, body, IMPORT_BODY_LIMIT)
        : { format: 'json' as const, rows: Array.isArray(body) ? body : (body?.contacts ?? []) };
      const query = request.query;
      return startImport(ctx, projectOf(request), upload, {
        filename: query.filename,
        list_ids: query.list_ids?.split(','),
        mapping: mappingOf(query.mapping),
        topics: topicsOf(query.topics),
        by: await importerOf(request, ctx),
      });
    },
  );
  app.post(
    '/contacts/import/preview',
    {
      config,
      bodyLimit: PREVIEW_BODY_LIMIT,
      validatorCompiler: validateJsonUploads,
      schema: {
        tags,
        summary: 'The columns and first rows of a CSV file, before importing it',
        operationId: 'previewContactImport',
        description:
          'Send the start of a CSV file (up to 1 MB; a last line cut short is left out). Answers its delimiter, each column with what it becomes when the import names no mapping (a contact field, `skip`, or `property:<name>`), and its first five rows. Nothing is stored.',
        body: Type.Unsafe<Readable>({ content: { 'text/csv': { schema: CsvFile } } }),
        response: { 200: ImportPreview, ...errors(400, 401, 413, 415) },
      },
    },
    async (request) => {
      if (!isStream(request.body)) throw new ValidationError('Send the start of a CSV file as text/csv');
      const { stream, limit, refusal } = csvUpload(request, request.body, PREVIEW_BODY_LIMIT);
      return previewCsv(await readUpload(stream, limit, refusal));
    },
  );
  app.get(
    '/imports/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Progress and outcome of a contact import',
        operationId: 'getContactImport',
        params: Type.Object({ id: Type.String({ description: 'import id' }) }),
        response: { 200: ImportSchema, ...errors(401, 404) },
      },
    },
    async (request) => getImport(ctx, projectOf(request), request.params.id),
  );
}
