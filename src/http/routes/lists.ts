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
import type { DomainContext } from '../../domain/core/context.ts';
import { projectFactsOf, projectOf } from '../auth.ts';
import { errors, list, Nullable, typed } from '../schemas.ts';

const ListSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('list'),
    name: Type.String(),
    description: Nullable(Type.String()),
    member_count: Type.Integer({ description: 'subscribed members' }),
    unsubscribed_count: Type.Integer({ description: 'members who left this list only' }),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { title: 'ContactList' },
);
const ListName = Type.String({
  minLength: 1,
  maxLength: 200,
  description: 'unique in the project; surrounding spaces are trimmed',
});
const ListDescription = Type.Optional(
  Nullable(Type.String({ maxLength: 1000, description: 'free text; null clears it' })),
);
const CreateListRequest = Type.Object(
  { name: ListName, description: ListDescription },
  { title: 'CreateListRequest' },
);
const UpdateListRequest = Type.Object(
  { name: Type.Optional(ListName), description: ListDescription },
  { title: 'UpdateListRequest' },
);
const Targets = Type.Object(
  {
    emails: Type.Optional(
      Type.Array(Type.String(), {
        minItems: 1,
        maxItems: 1000,
        description: 'addresses (up to 1,000); on add, unknown ones become contacts',
      }),
    ),
    ids: Type.Optional(
      Type.Array(Type.String({ format: 'uuid' }), {
        minItems: 1,
        maxItems: 1000,
        description: 'or contact ids (up to 1,000)',
      }),
    ),
  },
  { title: 'ListMembersRequest', description: 'either `emails` or `ids`, not both' },
);
const Change = Type.Object(
  {
    object: Type.Literal('list_change'),
    list_id: Type.String(),
    added: Type.Optional(Type.Integer()),
    already_members: Type.Optional(Type.Integer()),
    contacts_created: Type.Optional(Type.Integer()),
    removed: Type.Optional(Type.Integer()),
    unsubscribed: Type.Optional(Type.Integer()),
  },
  { title: 'ListChange' },
);
const Params = Type.Object({ id: Type.String({ description: 'list id' }) });

/** Lists: named groups of contacts, joined and left explicitly (segments are computed). */
export async function listRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const config = { auth: 'project' as const };
  const tags = ['lists'];

  app.get(
    '/lists',
    {
      config,
      schema: {
        tags,
        summary: 'Every list with member counts',
        operationId: 'listLists',
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
        operationId: 'createList',
        body: CreateListRequest,
        response: { 200: ListSchema, ...errors(400, 401, 409) },
      },
    },
    async (request) => createList(ctx, projectOf(request), request.body),
  );
  app.get(
    '/lists/:id',
    {
      config,
      schema: {
        tags,
        summary: 'One list',
        operationId: 'getList',
        params: Params,
        response: { 200: ListSchema, ...errors(401, 404) },
      },
    },
    async (request) => getList(ctx, projectOf(request), request.params.id),
  );
  app.patch(
    '/lists/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Rename or describe a list',
        operationId: 'updateList',
        params: Params,
        body: UpdateListRequest,
        response: { 200: ListSchema, ...errors(400, 401, 404, 409) },
      },
    },
    async (request) => updateList(ctx, projectOf(request), request.params.id, request.body),
  );
  app.delete(
    '/lists/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete a list (its contacts stay)',
        operationId: 'deleteList',
        params: Params,
        response: { 204: Type.Null(), ...errors(401, 404) },
      },
    },
    async (request, reply) => {
      await deleteList(ctx, projectOf(request), request.params.id);
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
        operationId: 'addContactsToList',
        description: 'Members who had unsubscribed from this list are subscribed again.',
        params: Params,
        body: Targets,
        response: { 200: Change, ...errors(400, 401, 402, 404) },
      },
    },
    async (request) => addToList(ctx, await projectFactsOf(request, ctx), request.params.id, request.body),
  );
  app.delete(
    '/lists/:id/contacts',
    {
      config,
      schema: {
        tags,
        summary: 'Take contacts off the list (204, like every delete)',
        operationId: 'removeContactsFromList',
        description:
          'The contacts stay (in the project and on their other lists). Addresses that are not on the list are ignored; GET /v1/lists/{id} gives the new `member_count`.',
        params: Params,
        body: Targets,
        response: { 204: Type.Null(), ...errors(400, 401, 404) },
      },
    },
    async (request, reply) => {
      await removeFromList(ctx, projectOf(request), request.params.id, request.body);
      return reply.code(204).send();
    },
  );
  app.post(
    '/lists/:id/unsubscribe',
    {
      config,
      schema: {
        tags,
        summary: 'Unsubscribe contacts from this list only',
        operationId: 'unsubscribeFromList',
        description:
          'They keep their other lists; to leave all marketing, PATCH /v1/contacts/{id} with {"subscribed": false}.',
        params: Params,
        body: Targets,
        response: { 200: Change, ...errors(400, 401, 404) },
      },
    },
    async (request) => unsubscribeFromList(ctx, projectOf(request), request.params.id, request.body),
  );
}
