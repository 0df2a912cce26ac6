import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { contactTopics, updateContactTopics } from '../../domain/audience/contact-topics.ts';
import { createTopic, deleteTopic, getTopic, listTopics, updateTopic } from '../../domain/audience/topics.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { readerTopics } from '../../domain/marketing/preferences.ts';
import { authOf, projectOf } from '../auth.ts';
import { htmlPage } from '../html.ts';
import { preferenceBody } from '../preference-page.ts';
import { errors, Nullable, typed } from '../schemas.ts';

const Subscription = Type.Union([Type.Literal('opt_in'), Type.Literal('opt_out')]);
const Visibility = Type.Union([Type.Literal('public'), Type.Literal('private')], {
  description: 'public: readers see it on the preference page; private: only the API and the dashboard',
});

const TopicSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('topic'),
    name: Type.String(),
    description: Nullable(Type.String()),
    default_subscription: Subscription,
    visibility: Visibility,
    subscribers: Type.Integer({
      description: 'contacts subscribed to marketing who get it now (by choice, or by the default)',
    }),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { title: 'Topic' },
);
const TopicName = Type.String({
  minLength: 1,
  maxLength: 50,
  description: 'what readers see; unique in the project',
});
const TopicDescription = Type.Optional(
  Nullable(
    Type.String({ maxLength: 200, description: 'for readers, on the preference page; null clears it' }),
  ),
);
const CreateTopicRequest = Type.Object(
  {
    name: TopicName,
    description: TopicDescription,
    default_subscription: Type.Union([Type.Literal('opt_in'), Type.Literal('opt_out')], {
      description:
        'for contacts who never chose: opt_in (they get it until they leave) or opt_out (only those who join); fixed once made',
    }),
    visibility: Type.Optional(Visibility),
  },
  { title: 'CreateTopicRequest' },
);
const UpdateTopicRequest = Type.Object(
  {
    name: Type.Optional(TopicName),
    description: TopicDescription,
    visibility: Type.Optional(Visibility),
    default_subscription: Type.Optional(
      Type.Union([Type.Literal('opt_in'), Type.Literal('opt_out')], {
        description: 'accepted only unchanged: the default is fixed once the topic exists',
      }),
    ),
  },
  { title: 'UpdateTopicRequest' },
);
const ContactTopicSchema = Type.Object(
  {
    id: Type.String({ description: 'the topic id' }),
    object: Type.Literal('contact_topic'),
    name: Type.String(),
    description: Nullable(Type.String()),
    visibility: Visibility,
    subscription: Subscription,
    chosen: Type.Boolean({ description: 'false: the topic’s default, the contact never chose' }),
  },
  { title: 'ContactTopic' },
);
const ContactTopicsSchema = Type.Object(
  { object: Type.Literal('list'), contact_id: Type.String(), data: Type.Array(ContactTopicSchema) },
  { title: 'ContactTopics' },
);
const TopicChoices = Type.Object(
  {
    topics: Type.Array(
      Type.Object({ id: Type.String({ description: 'topic id' }), subscription: Subscription }),
      { minItems: 1, maxItems: 100, description: 'the choices that change; topics not named keep theirs' },
    ),
  },
  { title: 'UpdateContactTopicsRequest' },
);
const Params = Type.Object({ id: Type.String({ description: 'topic id' }) });
const ContactParams = Type.Object({ id: Type.String({ description: 'contact id or email address' }) });

/** Topics, and each contact's choices of them. */
export async function topicRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const config = { auth: 'project' as const };
  const tags = ['topics'];

  app.get(
    '/topics',
    {
      config,
      schema: {
        tags,
        summary: 'Every topic, with how many contacts get it',
        operationId: 'listTopics',
        response: {
          200: Type.Object({ object: Type.Literal('list'), data: Type.Array(TopicSchema) }),
          ...errors(401),
        },
      },
    },
    async (request) => listTopics(ctx, projectOf(request)),
  );
  app.post(
    '/topics',
    {
      config,
      schema: {
        tags,
        summary: 'Create a topic',
        operationId: 'createTopic',
        description: 'At most 100 per project; a second topic of the same name is 409.',
        body: CreateTopicRequest,
        response: { 200: TopicSchema, ...errors(400, 401, 409) },
      },
    },
    async (request) => createTopic(ctx, projectOf(request), request.body),
  );
  app.get(
    '/topics/preference-page',
    {
      config,
      schema: {
        tags,
        summary:
          'The preference page as a reader who never chose sees it (a preview: its forms post nowhere)',
        operationId: 'previewPreferencePage',
        response: {
          200: Type.Object(
            { object: Type.Literal('preference_page_preview'), html: Type.String() },
            { title: 'PreferencePagePreview' },
          ),
          ...errors(401),
        },
      },
    },
    async (request) => {
      const projectId = projectOf(request);
      const project = await ctx.db
        .selectFrom('projects')
        .select('name')
        .where('id', '=', projectId)
        .executeTakeFirstOrThrow();
      const topics = await readerTopics(ctx.db, projectId, '00000000-0000-4000-8000-000000000000');
      const body = preferenceBody('preview', {
        email: 'reader@example.com',
        subscribed: true,
        lists: [],
        topics,
        topic: null,
        project: project.name,
        from: '',
      });
      return { object: 'preference_page_preview' as const, html: htmlPage('Email preferences', body) };
    },
  );
  app.get(
    '/topics/:id',
    {
      config,
      schema: {
        tags,
        summary: 'One topic',
        operationId: 'getTopic',
        params: Params,
        response: { 200: TopicSchema, ...errors(401, 404) },
      },
    },
    async (request) => getTopic(ctx, projectOf(request), request.params.id),
  );
  app.patch(
    '/topics/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Rename, describe, show or hide a topic',
        operationId: 'updateTopic',
        params: Params,
        body: UpdateTopicRequest,
        response: { 200: TopicSchema, ...errors(400, 401, 404, 409) },
      },
    },
    async (request) => updateTopic(ctx, projectOf(request), request.params.id, request.body),
  );
  app.delete(
    '/topics/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete a topic (its contacts’ choices go with it; their consent history stays)',
        operationId: 'deleteTopic',
        params: Params,
        response: { 204: Type.Null(), ...errors(401, 404) },
      },
    },
    async (request, reply) => {
      await deleteTopic(ctx, projectOf(request), request.params.id);
      return reply.code(204).send();
    },
  );
  app.get(
    '/contacts/:id/topics',
    {
      config,
      schema: {
        tags,
        summary: 'A contact’s subscription to every topic (their choice, or the topic’s default)',
        operationId: 'getContactTopics',
        params: ContactParams,
        response: { 200: ContactTopicsSchema, ...errors(401, 404) },
      },
    },
    async (request) => contactTopics(ctx, projectOf(request), request.params.id),
  );
  app.patch(
    '/contacts/:id/topics',
    {
      config,
      schema: {
        tags,
        summary: 'Change a contact’s choices of topics',
        operationId: 'updateContactTopics',
        description:
          'Each change is recorded in the contact’s consent history (source `api`, or `dashboard` from a signed-in person) and announced to webhooks as contact.topic_subscribed or contact.topic_unsubscribed.',
        params: ContactParams,
        body: TopicChoices,
        response: { 200: ContactTopicsSchema, ...errors(400, 401, 404) },
      },
    },
    async (request) =>
      updateContactTopics(
        ctx,
        projectOf(request),
        request.params.id,
        request.body,
        authOf(request).session ? 'dashboard' : 'api',
      ),
  );
}
