import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { contactTopics, updateContactTopics } from '../../domain/audience/contact-topics.ts';
import {
  createTopic,
  deleteTopic,
  getTopic,
  listTopics,
  type Subscription,
  updateTopic,
} from '../../domain/audience/topics.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { ValidationError } from '../../domain/core/errors.ts';
import { projectOf } from '../auth.ts';
import { typed } from '../schemas.ts';
import { compact } from './present.ts';
import { CursorQuery, IdParams, listOf } from './schemas.ts';

/**
 * Resend's topics and a contact's topics as Posthorn's (src/domain/audience/topics.ts and
 * contact-topics.ts): the same fields and meaning. A topic made here is `private` unless the
 * request says otherwise, as Resend's are; `/v1`'s default is `public`.
 */

const project = { auth: 'project' as const };

const TopicFields = {
  name: Type.Optional(Type.String()),
  description: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  default_subscription: Type.Optional(Type.String()),
  visibility: Type.Optional(Type.String()),
};
const TopicBody = Type.Object(TopicFields, { additionalProperties: true });

type Topic = Awaited<ReturnType<typeof getTopic>>;

const resendTopic = (t: Topic) =>
  compact({
    object: 'topic',
    id: t.id,
    name: t.name,
    description: t.description,
    default_subscription: t.default_subscription,
    visibility: t.visibility,
    created_at: t.created_at,
  });

/** A page of an ordered, small list (a project's topics: at most 100), `after` or `before` an id. */
function pageOf<T extends { id: string }>(rows: T[], q: { limit?: number; after?: string; before?: string }) {
  if (q.after !== undefined && q.before !== undefined)
    throw new ValidationError('Give `after` or `before`, not both');
  const limit = q.limit ?? rows.length;
  const anchorId = q.after ?? q.before;
  const at = anchorId === undefined ? -1 : rows.findIndex((r) => r.id === anchorId.toLowerCase());
  if (anchorId !== undefined && at < 0)
    throw new ValidationError(`\`${q.after ? 'after' : 'before'}\` must be the id of an item of this list`);
  const [from, to] = q.before !== undefined ? [Math.max(0, at - limit), at] : [at + 1, at + 1 + limit];
  const more = q.before !== undefined ? from > 0 : to < rows.length;
  return listOf(rows.slice(from, to), more);
}

/** Resend's SDK sends the choices as the body itself; its API reference wraps them in `topics`. */
const ContactTopicsBody = Type.Union([
  Type.Array(Type.Unknown()),
  Type.Object({ topics: Type.Optional(Type.Unknown()) }, { additionalProperties: true }),
]);

export async function resendTopicRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  app.post(
    '/topics',
    { config: project, schema: { hide: true, body: TopicBody } },
    async (request, reply) => {
      const body = request.body;
      const created = await createTopic(ctx, projectOf(request), {
        name: body.name as string,
        description: body.description,
        default_subscription: body.default_subscription as Subscription,
        visibility: (body.visibility ?? 'private') as 'public' | 'private',
      });
      return reply.code(201).send({ object: 'topic', id: created.id });
    },
  );
  app.get(
    '/topics',
    { config: project, schema: { hide: true, querystring: CursorQuery } },
    async (request) => {
      const { data } = await listTopics(ctx, projectOf(request));
      return pageOf(data.map(resendTopic) as { id: string }[], request.query);
    },
  );
  app.get('/topics/:id', { config: project, schema: { hide: true, params: IdParams } }, async (request) =>
    resendTopic(await getTopic(ctx, projectOf(request), request.params.id)),
  );
  app.patch(
    '/topics/:id',
    { config: project, schema: { hide: true, params: IdParams, body: TopicBody } },
    async (request) => {
      const { name, description, default_subscription, visibility } = request.body;
      const updated = await updateTopic(ctx, projectOf(request), request.params.id, {
        name,
        description,
        default_subscription: default_subscription as Subscription | undefined,
        visibility: visibility as 'public' | 'private' | undefined,
      });
      return { object: 'topic', id: updated.id };
    },
  );
  app.delete('/topics/:id', { config: project, schema: { hide: true, params: IdParams } }, async (request) =>
    deleteTopic(ctx, projectOf(request), request.params.id),
  );
  app.get(
    '/contacts/:id/topics',
    { config: project, schema: { hide: true, params: IdParams, querystring: CursorQuery } },
    async (request) => {
      const { data } = await contactTopics(ctx, projectOf(request), request.params.id);
      const rows = data.map((t) =>
        compact({ id: t.id, name: t.name, description: t.description, subscription: t.subscription }),
      );
      return pageOf(rows as { id: string }[], request.query);
    },
  );
  app.patch(
    '/contacts/:id/topics',
    { config: project, schema: { hide: true, params: IdParams, body: ContactTopicsBody } },
    async (request) => {
      const body = request.body;
      const topics = Array.isArray(body) ? body : body.topics;
      const updated = await updateContactTopics(ctx, projectOf(request), request.params.id, { topics });
      const given = new Set((topics as { id?: unknown }[]).map((t) => String(t.id).toLowerCase()));
      return {
        object: 'contact_topics',
        id: updated.contact_id,
        contact_id: updated.contact_id,
        topics: updated.data
          .filter((t) => given.has(t.id))
          .map((t) => ({ id: t.id, subscription: t.subscription })),
      };
    },
  );
}
