import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { listContacts } from '../../domain/audience/contacts.ts';
import {
  countSegment,
  createSegment,
  deleteSegment,
  getSegment,
  listSegments,
  previewSegmentCount,
  updateSegment,
} from '../../domain/audience/segments.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { projectOf } from '../auth.ts';
import { errors, list, Nullable, PageQuery, page, pageOf, typed } from '../schemas.ts';
import { ContactSchema } from './contacts.ts';

const DEFINITION_HELP =
  'A group {"all": [...]} or {"any": [...]} of conditions and nested groups. Conditions: {"field": "email|first_name|last_name|subscribed|created_at|updated_at|properties.<name>", "op": "equals|not_equals|contains|not_contains|starts_with|exists|not_exists|gt|gte|lt|lte|before|after|in|not_in", "value": ...}; {"list": "<list id>", "op": "member|not_member"}; {"event": "<name>", "count": {"gte": n, "lte": n}, "within_days": d, "where": [{"property", "op", "value"}]} (performed at least/at most n times in the last d days; {"count": {"lte": 0}} = never); {"revenue": {"gte": x, "lte": x}, "currency": "EUR", "event": "<name>", "within_days": d}.';
// The condition language has its own checker (segment-language.ts), whose errors name the exact
// item at fault ("definition.all[2].op: unknown operator ..."); the schema gives the outer shape only.
const SegmentItem = Type.Object(
  {},
  {
    additionalProperties: true,
    description: 'a condition (field, list, topic, event or revenue) or a nested group {"all"|"any": [...]}',
  },
);
const SegmentDefinition = Type.Object(
  {
    all: Type.Optional(Type.Array(SegmentItem, { description: 'every item holds' })),
    any: Type.Optional(Type.Array(SegmentItem, { description: 'at least one item holds' })),
  },
  {
    title: 'SegmentDefinition',
    description: `${DEFINITION_HELP} Exactly one of \`all\` and \`any\`; groups nest at most 5 deep; at most 50 conditions.`,
  },
);
const SegmentSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('segment'),
    name: Type.String(),
    description: Nullable(Type.String()),
    definition: SegmentDefinition,
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { title: 'Segment' },
);
const SegmentName = Type.String({
  minLength: 1,
  maxLength: 200,
  description: 'unique in the project; surrounding spaces are trimmed',
});
const SegmentDescription = Type.Optional(
  Nullable(Type.String({ maxLength: 1000, description: 'free text; null clears it' })),
);
const CreateSegmentRequest = Type.Object(
  { name: SegmentName, description: SegmentDescription, definition: SegmentDefinition },
  { title: 'CreateSegmentRequest' },
);
const UpdateSegmentRequest = Type.Object(
  {
    name: Type.Optional(SegmentName),
    description: SegmentDescription,
    definition: Type.Optional(SegmentDefinition),
  },
  { title: 'UpdateSegmentRequest' },
);
const Params = Type.Object({ id: Type.String({ description: 'segment id' }) });

/** Segments: saved filters whose members are computed on every read (never written by hand). */
export async function segmentRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const config = { auth: 'project' as const };
  const tags = ['segments'];

  app.get(
    '/segments',
    {
      config,
      schema: {
        tags,
        summary: 'Every segment with its definition',
        operationId: 'listSegments',
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
        operationId: 'createSegment',
        description: DEFINITION_HELP,
        body: CreateSegmentRequest,
        response: { 200: SegmentSchema, ...errors(400, 401, 409) },
      },
    },
    async (request) => createSegment(ctx, projectOf(request), request.body),
  );
  app.get(
    '/segments/:id',
    {
      config,
      schema: {
        tags,
        summary: 'One segment',
        operationId: 'getSegment',
        params: Params,
        response: { 200: SegmentSchema, ...errors(401, 404) },
      },
    },
    async (request) => getSegment(ctx, projectOf(request), request.params.id),
  );
  app.patch(
    '/segments/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Change a segment’s name, description or definition',
        operationId: 'updateSegment',
        params: Params,
        body: UpdateSegmentRequest,
        response: { 200: SegmentSchema, ...errors(400, 401, 404, 409) },
      },
    },
    async (request) => updateSegment(ctx, projectOf(request), request.params.id, request.body),
  );
  app.delete(
    '/segments/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete a segment',
        operationId: 'deleteSegment',
        params: Params,
        response: { 204: Type.Null(), ...errors(401, 404) },
      },
    },
    async (request, reply) => {
      await deleteSegment(ctx, projectOf(request), request.params.id);
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
        operationId: 'listSegmentContacts',
        params: Params,
        querystring: PageQuery,
        response: { 200: page(ContactSchema), ...errors(400, 401, 404) },
      },
    },
    async (request) =>
      listContacts(ctx, projectOf(request), { ...pageOf(request.query), segment: request.params.id }),
  );
  app.post(
    '/segments/preview',
    {
      config,
      schema: {
        tags,
        summary: 'Count the contacts a definition matches now, without saving a segment',
        operationId: 'previewSegment',
        description: 'For a live count while a segment is edited; the definition is checked as on save.',
        body: Type.Object({ definition: SegmentDefinition }, { title: 'SegmentPreviewRequest' }),
        response: {
          200: Type.Object(
            { object: Type.Literal('segment_preview'), count: Type.Integer() },
            { title: 'SegmentPreview' },
          ),
          ...errors(400, 401),
        },
      },
    },
    async (request) => previewSegmentCount(ctx, projectOf(request), request.body.definition),
  );
  app.get(
    '/segments/:id/count',
    {
      config,
      schema: {
        tags,
        summary: 'How many contacts the segment holds now',
        operationId: 'countSegmentContacts',
        params: Params,
        response: {
          200: Type.Object(
            {
              object: Type.Literal('segment_count'),
              segment_id: Type.String(),
              count: Type.Integer(),
            },
            { title: 'SegmentCount' },
          ),
          ...errors(401, 404),
        },
      },
    },
    async (request) => countSegment(ctx, projectOf(request), request.params.id),
  );
}
