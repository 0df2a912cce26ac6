import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import {
  addToList,
  createList,
  deleteList,
  getList,
  listLists,
  removeFromList,
  unsubscribeFromList,
  updateList,
} from '../../domain/audience/lists.ts';
import type { DomainContext } from '../../domain/context.ts';
import { projectFactsOf, projectOf } from '../auth.ts';
import { bearerSecurity, errors, list, Nullable } from '../schemas.ts';

const ListSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('list'),
  name: Type.String(),
  description: Nullable(Type.String()),
  member_count: Type.Integer({ description: 'subscribed members' }),
  unsubscribed_count: Type.Integer({ description: 'members who left this list only' }),
  created_at: Type.String(),
  updated_at: Type.String(),
});
const ListBody = Type.Object({
  name: Type.Optional(Type.Unknown({ description: 'required on create, unique in the project' })),
  description: Type.Optional(Type.Unknown()),
});
const Targets = Type.Object({
  emails: Type.Optional(Type.Unknown({ description: 'up to 1,000 addresses' })),
  ids: Type.Optional(Type.Unknown({ description: 'or up to 1,000 contact ids' })),
});
const Change = Type.Object({
  object: Type.Literal('list_change'),
  list_id: Type.String(),
  added: Type.Optional(Type.Integer()),
  already_members: Type.Optional(Type.Integer()),
  contacts_created: Type.Optional(Type.Integer()),
  removed: Type.Optional(Type.Integer()),
  unsubscribed: Type.Optional(Type.Integer()),
});
const Params = Type.Object({ id: Type.String() });
type Body = Record<string, unknown>;

/** Lists: named groups of contacts, joined and left explicitly (segments are computed). */
export async function listRoutes(app: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const config = { auth: 'project' as const };
  const tags = ['lists'];
  const id = (request: { params: unknown }) => (request.params as { id: string }).id;

  app.get(
    '/lists',
    {
      config,
      schema: {
        tags,
        summary: 'Every list with member counts',
        security: bearerSecurity,
        response: { 200: list(ListSchema), ...errors(401) },
      },
    },
    async (request) => listLists(ctx, projectOf(request)),
  );
  app.post(
    '/lists',
    {
      config,
      schema: {
        tags,
        summary: 'Create a list',
        security: bearerSecurity,
        body: ListBody,
        response: { 200: ListSchema, ...errors(400, 401, 409) },
      },
    },
    async (request) => createList(ctx, projectOf(request), request.body as Body),
  );
  app.get(
    '/lists/:id',
    {
      config,
      schema: {
        tags,
        summary: 'One list',
        security: bearerSecurity,
        params: Params,
        response: { 200: ListSchema, ...errors(401, 404) },
      },
    },
    async (request) => getList(ctx, projectOf(request), id(request)),
  );
  app.patch(
    '/lists/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Rename or describe a list',
        security: bearerSecurity,
        params: Params,
        body: ListBody,
        response: { 200: ListSchema, ...errors(400, 401, 404, 409) },
      },
    },
    async (request) => updateList(ctx, projectOf(request), id(request), request.body as Body),
  );
  app.delete(
    '/lists/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete a list (its contacts stay)',
        security: bearerSecurity,
        params: Params,
        response: { 204: Type.Null(), ...errors(401, 404) },
      },
    },
    async (request, reply) => {
      await deleteList(ctx, projectOf(request), id(request));
      return reply.code(204).send();
    },
  );
  app.post(
    '/lists/:id/contacts',
    {
      config,
      schema: {
        tags,
        summary: 'Add contacts to the list by email or id (unknown addresses become contacts)',
        description: 'Members who had unsubscribed from this list are subscribed again.',
        security: bearerSecurity,
        params: Params,
        body: Targets,
        response: { 200: Change, ...errors(400, 401, 402, 404) },
      },
    },
    async (request) => addToList(ctx, await projectFactsOf(request, ctx), id(request), request.body as Body),
  );
  app.delete(
    '/lists/:id/contacts',
    {
      config,
      schema: {
        tags,
        summary: 'Take contacts off the list',
        security: bearerSecurity,
        params: Params,
        body: Targets,
        response: { 200: Change, ...errors(400, 401, 404) },
      },
    },
    async (request) => removeFromList(ctx, projectOf(request), id(request), request.body as Body),
  );
  app.post(
    '/lists/:id/unsubscribe',
    {
      config,
      schema: {
        tags,
        summary: 'Unsubscribe contacts from this list only',
        description:
          'They keep their other lists; to leave all marketing, PATCH /v1/contacts/{id} with {"subscribed": false}.',
        security: bearerSecurity,
        params: Params,
        body: Targets,
        response: { 200: Change, ...errors(400, 401, 404) },
      },
    },
    async (request) => unsubscribeFromList(ctx, projectOf(request), id(request), request.body as Body),
  );
}
