import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import { previewTemplate, sendTemplateTest } from '../../domain/templates/preview.ts';
import {
  createTemplate,
  deleteTemplate,
  getTemplate,
  listStarters,
  listTemplates,
  listVersions,
  publishTemplate,
  updateTemplate,
} from '../../domain/templates/templates.ts';
import { authOf, projectFactsOf, projectOf } from '../auth.ts';
import { errors, IdParams, list, Nullable, typed } from '../schemas.ts';

const Variable = Type.Object(
  {
    name: Type.String({ description: 'a Liquid name: letters, digits and _ ({{ name }} in the template)' }),
    type: Type.Enum(['string', 'number', 'boolean', 'date'], { type: 'string' }),
    default: Type.Optional(Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
  },
  { title: 'TemplateVariable', description: 'a declared variable; without a default it is required at send' },
);

const contentFields = {
  subject: Type.String({ maxLength: 998, description: 'Liquid: {{ name }}, {{ contact.first_name }}' }),
  mjml: Nullable(
    Type.String({ description: 'MJML source with Liquid inside text and attributes (give this or `html`)' }),
  ),
  html: Nullable(Type.String({ description: 'your own HTML with Liquid (give this or `mjml`)' })),
  text: Nullable(Type.String({ description: 'the text part (Liquid); derived from the HTML when absent' })),
  preheader: Nullable(Type.String({ maxLength: 500, description: 'the preview line after the subject' })),
  from: Nullable(Type.String({ description: 'default sender: `address` or `Name <address>`' })),
  reply_to: Nullable(Type.String({ description: 'default reply-to address' })),
  variables: Type.Array(Variable, { maxItems: 100 }),
};

const optional = <T extends Record<string, import('typebox').TSchema>>(fields: T) =>
  Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, Type.Optional(v)])) as {
    [K in keyof T]: import('typebox').TOptional<T[K]>;
  };

const CreateTemplateRequest = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    starter: Type.Optional(
      Type.String({ description: 'copy a built-in starter: welcome, receipt, password_reset, newsletter' }),
    ),
    ...optional(contentFields),
  },
  { title: 'CreateTemplateRequest' },
);
const UpdateTemplateRequest = Type.Object(
  { name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })), ...optional(contentFields) },
  { title: 'UpdateTemplateRequest' },
);

const TemplateSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('template'),
    name: Type.String(),
    ...contentFields,
    latest_version: Nullable(
      Type.Integer({ description: 'the last published version; null before the first' }),
    ),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { title: 'Template' },
);
const VersionSchema = Type.Object(
  {
    object: Type.Literal('template_version'),
    template_id: Type.String(),
    version: Type.Integer(),
    ...contentFields,
    published_at: Type.String(),
  },
  { title: 'TemplateVersion' },
);
const StarterSchema = Type.Object(
  {
    object: Type.Literal('template_starter'),
    key: Type.String(),
    name: Type.String(),
    description: Type.String(),
    subject: Type.String(),
    preheader: Type.String(),
    mjml: Type.String(),
    variables: Type.Array(Variable),
  },
  { title: 'TemplateStarter' },
);
const previewFields = {
  version: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 1_000_000,
      description: 'a published version; the draft when absent',
    }),
  ),
  variables: Type.Optional(
    Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
  ),
  contact: Type.Optional(
    Type.String({ description: 'personalise for this contact of the project (id or email)' }),
  ),
};
const PreviewRequest = Type.Object(previewFields, { title: 'TemplatePreviewRequest' });
const TestRequest = Type.Object(
  {
    to: Type.String({ description: 'your own address or a project member’s: tests go nowhere else' }),
    ...previewFields,
  },
  { title: 'TemplateTestRequest' },
);
const PreviewSchema = Type.Object(
  {
    object: Type.Literal('template_preview'),
    version: Nullable(Type.Integer()),
    subject: Type.String(),
    html: Type.String(),
    text: Type.String(),
  },
  { title: 'TemplatePreview' },
);
const Accepted = Type.Object({ id: Type.String(), object: Type.Literal('email'), status: Type.String() });

/** Templates: drafts, published versions, starters, preview and test sends. */
export async function templateRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const config = { auth: 'project' as const };
  const tags = ['templates'];
  const one = (summary: string, operationId: string) => ({ tags, summary, operationId, params: IdParams });

  app.get(
    '/templates',
    {
      config,
      schema: {
        tags,
        summary: 'List templates (drafts, with their latest version)',
        operationId: 'listTemplates',
        response: { 200: list(TemplateSchema), ...errors(401) },
      },
    },
    async (request) => listTemplates(ctx, projectOf(request)),
  );
  app.get(
    '/templates/starters',
    {
      config,
      schema: {
        tags,
        summary: 'The built-in MJML starters a template can copy',
        operationId: 'listTemplateStarters',
        response: { 200: list(StarterSchema), ...errors(401) },
      },
    },
    async () => listStarters(),
  );
  app.post(
    '/templates',
    {
      config,
      schema: {
        tags,
        summary: 'Create a template draft (checked now: MJML, Liquid, declared variables)',
        operationId: 'createTemplate',
        body: CreateTemplateRequest,
        response: { 200: TemplateSchema, ...errors(400, 401, 409) },
      },
    },
    async (request) => createTemplate(ctx, projectOf(request), request.body),
  );
  app.get(
    '/templates/:id',
    {
      config,
      schema: {
        ...one('Get a template draft', 'getTemplate'),
        response: { 200: TemplateSchema, ...errors(401, 404) },
      },
    },
    async (request) => getTemplate(ctx, projectOf(request), request.params.id),
  );
  app.patch(
    '/templates/:id',
    {
      config,
      schema: {
        ...one('Edit the draft (published versions never change)', 'updateTemplate'),
        body: UpdateTemplateRequest,
        response: { 200: TemplateSchema, ...errors(400, 401, 404, 409) },
      },
    },
    async (request) => updateTemplate(ctx, projectOf(request), request.params.id, request.body),
  );
  app.delete(
    '/templates/:id',
    {
      config,
      schema: {
        ...one('Delete a template (409 while a scheduled email uses it)', 'deleteTemplate'),
        response: { 204: Type.Null(), ...errors(401, 404, 409) },
      },
    },
    async (request, reply) => {
      await deleteTemplate(ctx, projectOf(request), request.params.id);
      return reply.code(204).send();
    },
  );
  app.post(
    '/templates/:id/publish',
    {
      config,
      schema: {
        ...one('Publish the draft as the next immutable version', 'publishTemplate'),
        response: { 200: VersionSchema, ...errors(401, 404) },
      },
    },
    async (request) => publishTemplate(ctx, projectOf(request), request.params.id),
  );
  app.get(
    '/templates/:id/versions',
    {
      config,
      schema: {
        ...one('List published versions, newest first', 'listTemplateVersions'),
        response: { 200: list(VersionSchema), ...errors(401, 404) },
      },
    },
    async (request) => listVersions(ctx, projectOf(request), request.params.id),
  );
  app.post(
    '/templates/:id/preview',
    {
      config,
      schema: {
        ...one('Render the draft or a version for given variables or a contact', 'previewTemplate'),
        body: Nullable(PreviewRequest),
        response: { 200: PreviewSchema, ...errors(400, 401, 404) },
      },
    },
    async (request) => previewTemplate(ctx, projectOf(request), request.params.id, request.body ?? {}),
  );
  app.post(
    '/templates/:id/test',
    {
      config,
      schema: {
        ...one(
          'Send the rendered draft with a [Test] subject to yourself or a project member',
          'sendTemplateTest',
        ),
        body: TestRequest,
        response: { 200: Accepted, ...errors(400, 401, 402, 404, 429) },
      },
    },
    async (request) =>
      sendTemplateTest(
        ctx,
        {
          facts: await projectFactsOf(request, ctx),
          apiKeyId: authOf(request).key?.id ?? null,
          stream: 'transactional',
        },
        { accountId: authOf(request).accountId },
        request.params.id,
        request.body,
      ),
  );
}
