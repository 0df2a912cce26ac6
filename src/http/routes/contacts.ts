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
import { getImport, MAX_IMPORT_ROWS, startImport } from '../../domain/audience/imports.ts';
import type { DomainContext } from '../../domain/context.ts';
import { projectFactsOf, projectOf } from '../auth.ts';
import { bearerSecurity, errors, Nullable, PageQuery, page } from '../schemas.ts';
import { EventSchema, EventsQuery } from './events.ts';

const Value = Type.Union([Type.String(), Type.Number(), Type.Boolean()]);
export const ContactSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('contact'),
  email: Type.String(),
  first_name: Nullable(Type.String()),
  last_name: Nullable(Type.String()),
  properties: Type.Record(Type.String(), Value),
  subscribed: Type.Boolean({ description: 'marketing consent: false means unsubscribed from all marketing' }),
  lists: Type.Array(Type.String(), { description: 'ids of the lists the contact is subscribed to' }),
  created_at: Type.String(),
  updated_at: Type.String(),
});
const ConsentEntry = Type.Object({
  status: Type.String({ enum: ['granted', 'withdrawn'] }),
  source: Nullable(Type.String()),
  ip: Nullable(Type.String()),
  text: Nullable(Type.String()),
  created_at: Type.String(),
});
const ContactDetail = Type.Object({ ...ContactSchema.properties, consent_history: Type.Array(ConsentEntry) });
const ContactBody = Type.Object({
  email: Type.Optional(Type.Unknown({ description: 'required on create; unique per project, any case' })),
  first_name: Type.Optional(Type.Unknown({ description: 'string or null' })),
  last_name: Type.Optional(Type.Unknown({ description: 'string or null' })),
  properties: Type.Optional(
    Type.Unknown({
      description: 'object of string, number or boolean values; on PATCH merged, null removes a key',
    }),
  ),
  subscribed: Type.Optional(Type.Unknown({ description: 'boolean, default true' })),
  consent: Type.Optional(
    Type.Unknown({
      description: '{status: "granted"|"withdrawn", source, ip, text}: kept as history, never overwritten',
    }),
  ),
});
const ImportSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('import'),
  status: Type.String({ enum: ['queued', 'running', 'completed', 'failed'] }),
  format: Type.String({ enum: ['csv', 'json'] }),
  total: Nullable(Type.Integer()),
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
});
const Params = Type.Object({ id: Type.String({ description: 'contact id or email address' }) });
const IMPORT_BODY_LIMIT = 256 * 1024 * 1024;

/** Contacts, their events and bulk imports. */
export async function contactRoutes(app: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const config = { auth: 'project' as const };
  const tags = ['contacts'];
  // imports take CSV as it is; this parser is scoped to this file's routes
  app.addContentTypeParser(
    ['text/csv', 'application/csv'],
    { parseAs: 'buffer', bodyLimit: IMPORT_BODY_LIMIT },
    (_req, body, done) => done(null, body),
  );

  app.get(
    '/contacts',
    {
      config,
      schema: {
        tags,
        summary: 'List contacts, newest first',
        security: bearerSecurity,
        querystring: Type.Object({
          ...PageQuery.properties,
          email: Type.Optional(Type.String({ description: 'exact address, any case' })),
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
    async (request) => listContacts(ctx, projectOf(request), request.query as never),
  );
  app.post(
    '/contacts',
    {
      config,
      schema: {
        tags,
        summary: 'Create a contact',
        description:
          'A second contact with the same address (compared case-insensitively) is 409; past the plan’s contact limit, 402.',
        security: bearerSecurity,
        body: ContactBody,
        response: { 200: ContactSchema, ...errors(400, 401, 402, 409) },
      },
    },
    async (request) =>
      createContact(ctx, await projectFactsOf(request, ctx), request.body as Record<string, unknown>),
  );
  app.get(
    '/contacts/:id',
    {
      config,
      schema: {
        tags,
        summary: 'One contact by id or email, with its consent history',
        security: bearerSecurity,
        params: Params,
        response: { 200: ContactDetail, ...errors(401, 404) },
      },
    },
    async (request) => getContact(ctx, projectOf(request), (request.params as { id: string }).id),
  );
  app.patch(
    '/contacts/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Update a contact: names, email, properties (merged), subscription with consent',
        security: bearerSecurity,
        params: Params,
        body: ContactBody,
        response: { 200: ContactDetail, ...errors(400, 401, 404, 409) },
      },
    },
    async (request) =>
      updateContact(
        ctx,
        projectOf(request),
        (request.params as { id: string }).id,
        request.body as Record<string, unknown>,
      ),
  );
  app.delete(
    '/contacts/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete a contact with its list memberships and events',
        security: bearerSecurity,
        params: Params,
        response: { 204: Type.Null(), ...errors(401, 404) },
      },
    },
    async (request, reply) => {
      await deleteContact(ctx, projectOf(request), (request.params as { id: string }).id);
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
        security: bearerSecurity,
        params: Params,
        querystring: EventsQuery,
        response: { 200: page(EventSchema), ...errors(400, 401, 404) },
      },
    },
    async (request) =>
      listContactEvents(
        ctx,
        projectOf(request),
        (request.params as { id: string }).id,
        request.query as never,
      ),
  );

  app.post(
    '/contacts/import',
    {
      config,
      bodyLimit: IMPORT_BODY_LIMIT,
      schema: {
        tags,
        summary: 'Import contacts in bulk, in the background',
        description: `Send a CSV file (\`Content-Type: text/csv\`, a header row with an \`email\` column; \`first_name\`, \`last_name\` and \`subscribed\` map to fields, every other column becomes a property) or a JSON array of contacts (or {"contacts": [...]}), up to ${MAX_IMPORT_ROWS.toLocaleString('en')} rows and 256 MB. Answers at once with the import; follow it with GET /v1/imports/{id}. Existing addresses are updated (properties merged), so importing the same file twice creates no duplicates. Invalid rows are reported with their line numbers; the others are imported.`,
        security: bearerSecurity,
        body: Type.Unknown({ description: 'text/csv, a JSON array of contacts, or {"contacts": [...]}' }),
        response: { 200: ImportSchema, ...errors(400, 401, 413, 415) },
      },
    },
    async (request) => {
      const body = request.body;
      const upload = Buffer.isBuffer(body)
        ? { format: 'csv' as const, csv: body }
        : {
            format: 'json' as const,
            rows:
              body && typeof body === 'object' && !Array.isArray(body)
                ? (body as { contacts?: unknown }).contacts
                : body,
          };
      return startImport(ctx, projectOf(request), upload);
    },
  );
  app.get(
    '/imports/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Progress and outcome of a contact import',
        security: bearerSecurity,
        params: Type.Object({ id: Type.String() }),
        response: { 200: ImportSchema, ...errors(401, 404) },
      },
    },
    async (request) => getImport(ctx, projectOf(request), (request.params as { id: string }).id),
  );
}
