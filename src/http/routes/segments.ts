import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { listContacts } from '../../domain/audience/contacts.ts';
import {
  countSegment,
  createSegment,
  deleteSegment,
  getSegment,
  listSegments,
  updateSegment,
} from '../../domain/audience/segments.ts';
import type { DomainContext } from '../../domain/context.ts';
import { projectOf } from '../auth.ts';
import { bearerSecurity, errors, list, Nullable, PageQuery, page } from '../schemas.ts';
import { ContactSchema } from './contacts.ts';

const SegmentSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('segment'),
  name: Type.String(),
  description: Nullable(Type.String()),
  definition: Type.Unknown(),
  created_at: Type.String(),
  updated_at: Type.String(),
});
const DEFINITION_HELP =
  'A group {"all": [...]} or {"any": [...]} of conditions and nested groups. Conditions: {"field": "email|first_name|last_name|subscribed|created_at|updated_at|properties.<name>", "op": "equals|not_equals|contains|not_contains|starts_with|exists|not_exists|gt|gte|lt|lte|before|after|in|not_in", "value": ...}; {"list": "<list id>", "op": "member|not_member"}; {"event": "<name>", "count": {"gte": n, "lte": n}, "within_days": d, "where": [{"property", "op", "value"}]} (performed at least/at most n times in the last d days; {"count": {"lte": 0}} = never); {"revenue": {"gte": x, "lte": x}, "currency": "EUR", "event": "<name>", "within_days": d}.';
const SegmentBody = Type.Object({
  name: Type.Optional(Type.Unknown({ description: 'required on create, unique in the project' })),
  description: Type.Optional(Type.Unknown()),
  definition: Type.Optional(Type.Unknown({ description: DEFINITION_HELP })),
});
const Params = Type.Object({ id: Type.String() });
type Body = Record<string, unknown>;

/** Segments: saved filters whose members are computed on every read (never written by hand). */
export async function segmentRoutes(app: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const config = { auth: 'project' as const };
  const tags = ['segments'];
  const id = (request: { params: unknown }) => (request.params as { id: string }).id;

  app.get(
    '/segments',
    {
      config,
      schema: {
        tags,
        summary: 'Every segment with its definition',
        security: bearerSecurity,
        response: { 200: list(SegmentSchema), ...errors(401) },
      },
    },
    async (request) => listSegments(ctx, projectOf(request)),
  );
  app.post(
    '/segments',
    {
      config,
      schema: {
        tags,
        summary: 'Create a segment',
        description: DEFINITION_HELP,
        security: bearerSecurity,
        body: SegmentBody,
        response: { 200: SegmentSchema, ...errors(400, 401, 409) },
      },
    },
    async (request) => createSegment(ctx, projectOf(request), request.body as Body),
  );
  app.get(
    '/segments/:id',
    {
      config,
      schema: {
        tags,
        summary: 'One segment',
        security: bearerSecurity,
        params: Params,
        response: { 200: SegmentSchema, ...errors(401, 404) },
      },
    },
    async (request) => getSegment(ctx, projectOf(request), id(request)),
  );
  app.patch(
    '/segments/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Change a segment’s name, description or definition',
        security: bearerSecurity,
        params: Params,
        body: SegmentBody,
        response: { 200: SegmentSchema, ...errors(400, 401, 404, 409) },
      },
    },
    async (request) => updateSegment(ctx, projectOf(request), id(request), request.body as Body),
  );
  app.delete(
    '/segments/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete a segment',
        security: bearerSecurity,
        params: Params,
        response: { 204: Type.Null(), ...errors(401, 404) },
      },
    },
    async (request, reply) => {
      await deleteSegment(ctx, projectOf(request), id(request));
      return reply.code(204).send();
    },
  );
  app.get(
    '/segments/:id/contacts',
    {
      config,
      schema: {
        tags,
        summary: 'The segment’s members now, newest first',
        security: bearerSecurity,
        params: Params,
        querystring: PageQuery,
        response: { 200: page(ContactSchema), ...errors(400, 401, 404) },
      },
    },
    async (request) =>
      listContacts(ctx, projectOf(request), {
        ...(request.query as { limit: number; offset: number }),
        segment: id(request),
      }),
  );
  app.get(
    '/segments/:id/count',
    {
      config,
      schema: {
        tags,
        summary: 'How many contacts the segment holds now',
        security: bearerSecurity,
        params: Params,
        response: {
          200: Type.Object({
            object: Type.Literal('segment_count'),
            segment_id: Type.String(),
            count: Type.Integer(),
          }),
          ...errors(401, 404),
        },
      },
    },
    async (request) => countSegment(ctx, projectOf(request), id(request)),
  );
}
