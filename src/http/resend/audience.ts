import type { FastifyInstance } from 'fastify';
import { type Selectable, sql } from 'kysely';
import { type Static, Type } from 'typebox';
import type { ContactsTable, ListsTable } from '../../db/schema.ts';
import {
  createContact,
  deleteContact,
  getContact,
  presentContact,
  updateContact,
} from '../../domain/audience/contacts.ts';
import {
  addToList,
  createList,
  deleteList,
  getList,
  listLists,
  removeFromList,
  updateList,
} from '../../domain/audience/lists.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { keysetPage } from '../../domain/core/keyset.ts';
import { projectFactsOf, projectOf } from '../auth.ts';
import { typed } from '../schemas.ts';
import { compact } from './present.ts';
import { CursorQuery, IdParams, listOf } from './schemas.ts';

/**
 * Contacts, and Resend's segments and audiences as Posthorn's lists (a named group of contacts;
 * Posthorn's own segments are rules, which Resend's API has no place for).
 */

const project = { auth: 'project' as const };

type ContactView = ReturnType<typeof presentContact>;

const resendContact = (c: ContactView) =>
  compact({
    object: 'contact',
    id: c.id,
    email: c.email,
    first_name: c.first_name,
    last_name: c.last_name,
    created_at: c.created_at,
    unsubscribed: !c.subscribed,
    properties: c.properties,
  });

const ContactFields = {
  email: Type.Optional(Type.String()),
  first_name: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  last_name: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  unsubscribed: Type.Optional(Type.Boolean()),
  properties: Type.Optional(
    Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()])),
  ),
  topics: Type.Optional(Type.Unknown()),
};
const ContactBody = Type.Object(ContactFields, { additionalProperties: true });
type ContactInput = Static<typeof ContactBody>;

const changesOf = (b: ContactInput) => ({
  ...(b.first_name !== undefined ? { first_name: b.first_name } : {}),
  ...(b.last_name !== undefined ? { last_name: b.last_name } : {}),
  ...(b.unsubscribed !== undefined ? { subscribed: !b.unsubscribed } : {}),
  ...(b.properties !== undefined ? { properties: b.properties } : {}),
});

const resendSegment = (l: { id: string; name: string; created_at: string }) => ({
  object: 'segment',
  id: l.id,
  name: l.name,
  created_at: l.created_at,
});

/** Contacts, newest first, of the project or of one list. */
async function contactPage(
  ctx: DomainContext,
  projectId: string,
  listId: string | undefined,
  query: Static<typeof CursorQuery>,
) {
  if (listId) await getList(ctx, projectId, listId);
  const scope = listId
    ? sql<boolean>`project_id = ${projectId} and id in (select contact_id from list_members where list_id = ${listId})`
    : sql<boolean>`project_id = ${projectId}`;
  const page = await keysetPage<Selectable<ContactsTable>>(ctx.db, 'contacts', scope, query);
  return listOf(
    page.rows.map((r) => resendContact(presentContact(r))),
    page.has_more,
  );
}

export async function resendAudienceRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const create = async (
    facts: Awaited<ReturnType<typeof projectFactsOf>>,
    b: ContactInput,
    segments: string[],
  ) => {
    // every segment is looked up first: one that does not exist refuses the contact, which is not made
    for (const list of segments) await getList(ctx, facts.id, list);
    const { properties, ...rest } = changesOf(b);
    const kept = properties && Object.fromEntries(Object.entries(properties).filter(([, v]) => v !== null));
    const contact = await createContact(ctx, facts, {
      email: b.email ?? '',
      ...rest,
      // Resend's topic choices, [{id, subscription}], as Posthorn's (checked by the domain)
      ...(b.topics !== undefined ? { topics: b.topics as never } : {}),
      ...(kept ? { properties: kept as Record<string, string | number | boolean> } : {}),
    });
    for (const list of segments) await addToList(ctx, facts, list, { ids: [contact.id] });
    return { object: 'contact', id: contact.id };
  };
  app.post(
    '/contacts',
    {
      config: project,
      schema: {
        hide: true,
        body: Type.Object(
          {
            ...ContactFields,
            segments: Type.Optional(
              Type.Array(
                Type.Union([
                  Type.String(),
                  Type.Object({ id: Type.String() }, { additionalProperties: true }),
                ]),
              ),
            ),
          },
          { additionalProperties: true },
        ),
      },
    },
    async (request, reply) =>
      reply.code(201).send(
        await create(
          await projectFactsOf(request, ctx),
          request.body,
          (request.body.segments ?? []).map((s) => (typeof s === 'string' ? s : s.id)),
        ),
      ),
  );
  app.post(
    '/audiences/:id/contacts',
    {
      config: project,
      schema: {
        hide: true,
        params: IdParams,
        body: ContactBody,
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(await create(await projectFactsOf(request, ctx), request.body, [request.params.id])),
  );
  resendContactReads(app, ctx);
}

function resendContactReads(app: ReturnType<typeof typed>, ctx: DomainContext) {
  app.get(
    '/contacts',
    {
      config: project,
      schema: {
        hide: true,
        querystring: Type.Object({ ...CursorQuery.properties, segment_id: Type.Optional(Type.String()) }),
      },
    },
    async (request) => contactPage(ctx, projectOf(request), request.query.segment_id, request.query),
  );
  for (const path of ['/segments/:id/contacts', '/audiences/:id/contacts'])
    app.get(
      path,
      { config: project, schema: { hide: true, params: IdParams, querystring: CursorQuery } },
      async (request) => contactPage(ctx, projectOf(request), request.params.id, request.query),
    );
  for (const prefix of ['', '/audiences/:audience_id']) {
    const params = Type.Object({ id: Type.String(), audience_id: Type.Optional(Type.String()) });
    app.get(`${prefix}/contacts/:id`, { config: project, schema: { hide: true, params } }, async (request) =>
      resendContact(await getContact(ctx, projectOf(request), request.params.id)),
    );
    app.patch(
      `${prefix}/contacts/:id`,
      {
        config: project,
        schema: { hide: true, params, body: ContactBody },
      },
      async (request) => {
        const updated = await updateContact(
          ctx,
          projectOf(request),
          request.params.id,
          changesOf(request.body),
        );
        return { object: 'contact', id: updated.id };
      },
    );
    app.delete(
      `${prefix}/contacts/:id`,
      { config: project, schema: { hide: true, params } },
      async (request) => {
        const found = await getContact(ctx, projectOf(request), request.params.id);
        await deleteContact(ctx, projectOf(request), found.id);
        return { object: 'contact', id: found.id, deleted: true };
      },
    );
  }

  resendSegmentRoutes(app, ctx);
}

function resendSegmentRoutes(app: ReturnType<typeof typed>, ctx: DomainContext) {
  // a contact's segments (lists)
  const ContactSegment = Type.Object({ id: Type.String(), segment_id: Type.String() });
  app.get(
    '/contacts/:id/segments',
    { config: project, schema: { hide: true, params: IdParams, querystring: CursorQuery } },
    async (request) => {
      const contact = await getContact(ctx, projectOf(request), request.params.id);
      const { data } = await listLists(ctx, projectOf(request));
      return listOf(
        data
          .filter((l) => contact.lists.includes(l.id))
          .map(({ id, name, created_at }) => ({ id, name, created_at })),
      );
    },
  );
  app.post(
    '/contacts/:id/segments/:segment_id',
    { config: project, schema: { hide: true, params: ContactSegment } },
    async (request) => {
      const facts = await projectFactsOf(request, ctx);
      const contact = await getContact(ctx, facts.id, request.params.id);
      await addToList(ctx, facts, request.params.segment_id, { ids: [contact.id] });
      return { object: 'contact_segment', contact_id: contact.id, segment_id: request.params.segment_id };
    },
  );
  app.delete(
    '/contacts/:id/segments/:segment_id',
    { config: project, schema: { hide: true, params: ContactSegment } },
    async (request) => {
      const contact = await getContact(ctx, projectOf(request), request.params.id);
      await removeFromList(ctx, projectOf(request), request.params.segment_id, { ids: [contact.id] });
      return {
        object: 'contact_segment',
        contact_id: contact.id,
        segment_id: request.params.segment_id,
        deleted: true,
      };
    },
  );

  // segments and audiences: Posthorn's lists
  for (const base of ['/segments', '/audiences']) {
    app.post(
      base,
      {
        config: project,
        schema: { hide: true, body: Type.Object({ name: Type.String() }, { additionalProperties: true }) },
      },
      async (request, reply) => {
        const list = await createList(ctx, projectOf(request), { name: request.body.name });
        return reply.code(201).send({ object: 'segment', id: list.id, name: list.name });
      },
    );
    app.get(base, { config: project, schema: { hide: true, querystring: CursorQuery } }, async (request) => {
      const page = await keysetPage<Selectable<ListsTable>>(
        ctx.db,
        'lists',
        sql<boolean>`project_id = ${projectOf(request)}`,
        request.query,
      );
      return listOf(
        page.rows.map((l) => ({ id: l.id, name: l.name, created_at: l.created_at.toISOString() })),
        page.has_more,
      );
    });
    app.get(`${base}/:id`, { config: project, schema: { hide: true, params: IdParams } }, async (request) =>
      resendSegment(await getList(ctx, projectOf(request), request.params.id)),
    );
    app.patch(
      `${base}/:id`,
      {
        config: project,
        schema: {
          hide: true,
          params: IdParams,
          body: Type.Object({ name: Type.String() }, { additionalProperties: true }),
        },
      },
      async (request) => {
        const list = await updateList(ctx, projectOf(request), request.params.id, {
          name: request.body.name,
        });
        return { object: 'segment', id: list.id };
      },
    );
    app.delete(
      `${base}/:id`,
      { config: project, schema: { hide: true, params: IdParams } },
      async (request) => {
        await deleteList(ctx, projectOf(request), request.params.id);
        return { object: 'segment', id: request.params.id, deleted: true };
      },
    );
  }
}
