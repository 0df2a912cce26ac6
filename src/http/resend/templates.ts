import type { FastifyInstance } from 'fastify';
import { type Selectable, sql } from 'kysely';
import { type Static, Type } from 'typebox';
import type { TemplatesTable, TemplateVariable } from '../../db/schema.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { ValidationError } from '../../domain/core/errors.ts';
import { isUuid } from '../../domain/core/ids.ts';
import { keysetPage } from '../../domain/core/keyset.ts';
import {
  createTemplate,
  deleteTemplate,
  findTemplateByIdOrName,
  publishTemplate,
  updateTemplate,
} from '../../domain/templates/templates.ts';
import { projectOf } from '../auth.ts';
import { typed } from '../schemas.ts';
import { ResendRefusal } from './errors.ts';
import { liquidOfMergeTags } from './merge-tags.ts';
import { compact } from './present.ts';
import { CursorQuery, IdParams, listOf } from './schemas.ts';

/**
 * Resend's templates as Posthorn's (src/domain/templates): the draft is the template, `publish`
 * freezes it as the next version, `duplicate` copies the draft. A template's name is unique in its
 * project and is what Resend calls its alias: every method that takes an id takes the name too,
 * and `alias`, when given, is the name kept. Resend's `{{{KEY}}}` and `{{{KEY|fallback}}}` in the
 * subject and bodies become Liquid (`{{ KEY }}`, `{{ KEY | default: "fallback" }}`) when saved.
 */

const project = { auth: 'project' as const };

const Variable = Type.Object(
  {
    key: Type.String(),
    type: Type.String(),
    fallback_value: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: true },
);
const TemplateFields = {
  name: Type.Optional(Type.String()),
  alias: Type.Optional(Type.String()),
  from: Type.Optional(Type.String()),
  subject: Type.Optional(Type.String()),
  reply_to: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
  html: Type.Optional(Type.String()),
  text: Type.Optional(Type.String()),
  variables: Type.Optional(Type.Array(Variable)),
};
const TemplateBody = Type.Object(TemplateFields, { additionalProperties: true });
type Body = Static<typeof TemplateBody>;

/** Resend's variable types Posthorn holds (`object` and `list` it does not). */
const TYPES = ['string', 'number', 'boolean'];

function variablesOf(given: Body['variables']): TemplateVariable[] | undefined {
  return given?.map((v, i) => {
    if (!TYPES.includes(v.type))
      throw new ValidationError(
        `\`variables[${i}].type\` must be one of ${TYPES.join(', ')}: Posthorn's template variables hold no objects or lists`,
      );
    const fallback = v.fallback_value;
    if (fallback === undefined || fallback === null)
      return { name: v.key, type: v.type as TemplateVariable['type'] };
    return { name: v.key, type: v.type as TemplateVariable['type'], default: fallback as string };
  });
}

const TAG = /\{\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\|([^{}]*?))?\s*\}\}\}/g;

/** The text with `{{{KEY}}}` of the declared variables as Liquid, and Resend's contact tags too. */
function liquidOf(text: string | undefined, keys: Set<string>): string | undefined {
  if (text === undefined) return undefined;
  const own = text.replace(TAG, (tag, key: string, fallback: string | undefined) => {
    if (!keys.has(key)) return tag;
    const given = fallback?.trim();
    return given ? `{{ ${key} | default: ${JSON.stringify(given)} }}` : `{{ ${key} }}`;
  });
  return liquidOfMergeTags(own);
}

function replyToOf(value: Body['reply_to']): string | null | undefined {
  const all = Array.isArray(value) ? value : value === undefined ? undefined : [value];
  if (all && all.length > 1) throw new ValidationError('`reply_to` takes one address in a Posthorn template');
  return all === undefined ? undefined : (all[0] ?? null);
}

/** A Resend template's fields as a Posthorn template's (the name is the alias when one is given). */
function templateInput(body: Body, currentKeys: string[] = []) {
  const variables = variablesOf(body.variables);
  const keys = new Set(variables?.map((v) => v.name) ?? currentKeys);
  const name = body.alias ?? body.name;
  const html = liquidOf(body.html, keys);
  return {
    ...(name !== undefined ? { name } : {}),
    ...(body.subject !== undefined ? { subject: liquidOf(body.subject, keys) } : {}),
    ...(html !== undefined ? { html } : {}),
    ...(body.text !== undefined ? { text: liquidOf(body.text, keys) } : {}),
    ...(body.from !== undefined ? { from: body.from } : {}),
    ...(body.reply_to !== undefined ? { reply_to: replyToOf(body.reply_to) } : {}),
    ...(variables !== undefined ? { variables } : {}),
  };
}

type Row = Selectable<TemplatesTable>;

/** When the latest version was published, if any. */
async function publishedAt(ctx: DomainContext, row: Row): Promise<Date | null> {
  if (row.latest_version === 0) return null;
  const version = await ctx.db
    .selectFrom('template_versions')
    .select('published_at')
    .where('template_id', '=', row.id)
    .where('version', '=', row.latest_version)
    .executeTakeFirst();
  return version?.published_at ?? null;
}

const summary = (row: Row, published: Date | null) => ({
  id: row.id,
  name: row.name,
  alias: row.name,
  status: row.latest_version > 0 ? ('published' as const) : ('draft' as const),
  published_at: published?.toISOString() ?? null,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
});

async function resendTemplate(ctx: DomainContext, row: Row) {
  const published = await publishedAt(ctx, row);
  const variables = (row.variables as unknown as TemplateVariable[]) ?? [];
  return {
    object: 'template',
    ...summary(row, published),
    ...compact({
      current_version_id: row.latest_version > 0 ? `${row.id}.${row.latest_version}` : null,
      from: row.from_address,
      subject: row.subject,
      text: row.text_body,
    }),
    reply_to: row.reply_to ? [row.reply_to] : null,
    html: row.html ?? row.compiled_html,
    variables: variables.map((v) => ({
      key: v.name,
      type: v.type === 'date' ? 'string' : v.type,
      ...(v.default !== undefined ? { fallback_value: v.default } : {}),
    })),
    has_unpublished_versions: published === null || row.updated_at > published,
  };
}

/** A free name for a copy: "Name (copy)", then "Name (copy 2)", ... */
async function copyName(ctx: DomainContext, projectId: string, name: string) {
  const base = `${name.slice(0, 185)} (copy`;
  const taken = new Set(
    (
      await ctx.db
        .selectFrom('templates')
        .select('name')
        .where('project_id', '=', projectId)
        .where('name', 'like', `${base.replace(/[\\%_]/g, '\\$&')}%`)
        .execute()
    ).map((r) => r.name),
  );
  for (let n = 1; ; n++) {
    const candidate = n === 1 ? `${base})` : `${base} ${n})`;
    if (!taken.has(candidate)) return candidate;
  }
}

async function duplicate(ctx: DomainContext, projectId: string, idOrAlias: string) {
  const row = await findTemplateByIdOrName(ctx, projectId, idOrAlias);
  const copy = await createTemplate(ctx, projectId, {
    name: await copyName(ctx, projectId, row.name),
    subject: row.subject,
    mjml: row.mjml,
    html: row.mjml === null ? row.html : null,
    text: row.text_body,
    preheader: row.preheader,
    from: row.from_address,
    reply_to: row.reply_to,
    variables: row.variables as unknown as TemplateVariable[],
  });
  return { object: 'template', id: copy.id };
}

/**
 * Sends name a template as Resend's do, by id or alias: each alias (a template's name here) is
 * replaced by its template's id before the send is accepted; one that names no template is left
 * for the send's own check to refuse (404, or that message alone in a permissive batch).
 */
export async function resolveTemplateAliases(
  ctx: DomainContext,
  projectId: string,
  emails: { template?: { id: string } }[],
) {
  for (const email of emails) {
    const given = email.template?.id;
    if (typeof given !== 'string' || given === '' || isUuid(given)) continue;
    const row = await findTemplateByIdOrName(ctx, projectId, given).catch(() => null);
    if (row && email.template) email.template.id = row.id;
  }
}

export async function resendTemplateRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  app.post(
    '/templates',
    { config: project, schema: { hide: true, body: TemplateBody } },
    async (request, reply) => {
      const input = templateInput(request.body);
      // Resend's subject is optional; a Posthorn template's emails go out with its subject
      if (input.subject === undefined)
        throw new ResendRefusal(
          422,
          'missing_required_field',
          '`subject` is required: the emails sent with a Posthorn template take their subject from it',
        );
      const created = await createTemplate(ctx, projectOf(request), {
        ...input,
        subject: input.subject,
        name: input.name ?? '',
      });
      return reply.code(201).send({ object: 'template', id: created.id });
    },
  );
  app.get(
    '/templates',
    { config: project, schema: { hide: true, querystring: CursorQuery } },
    async (request) => {
      const page = await keysetPage<Row>(
        ctx.db,
        'templates',
        sql<boolean>`project_id = ${projectOf(request)}`,
        request.query,
      );
      return listOf(
        await Promise.all(page.rows.map(async (r) => summary(r, await publishedAt(ctx, r)))),
        page.has_more,
      );
    },
  );
  app.get('/templates/:id', { config: project, schema: { hide: true, params: IdParams } }, async (request) =>
    resendTemplate(ctx, await findTemplateByIdOrName(ctx, projectOf(request), request.params.id)),
  );
  app.patch(
    '/templates/:id',
    { config: project, schema: { hide: true, params: IdParams, body: TemplateBody } },
    async (request) => {
      const row = await findTemplateByIdOrName(ctx, projectOf(request), request.params.id);
      const keys = ((row.variables as unknown as TemplateVariable[]) ?? []).map((v) => v.name);
      await updateTemplate(ctx, projectOf(request), row.id, templateInput(request.body, keys));
      return { object: 'template', id: row.id };
    },
  );
  app.delete(
    '/templates/:id',
    { config: project, schema: { hide: true, params: IdParams } },
    async (request) => {
      const row = await findTemplateByIdOrName(ctx, projectOf(request), request.params.id);
      await deleteTemplate(ctx, projectOf(request), row.id);
      return { object: 'template', id: row.id, deleted: true };
    },
  );
  app.post(
    '/templates/:id/publish',
    { config: project, schema: { hide: true, params: IdParams } },
    async (request) => {
      const row = await findTemplateByIdOrName(ctx, projectOf(request), request.params.id);
      await publishTemplate(ctx, projectOf(request), row.id);
      return { object: 'template', id: row.id };
    },
  );
  app.post(
    '/templates/:id/duplicate',
    { config: project, schema: { hide: true, params: IdParams } },
    async (request) => duplicate(ctx, projectOf(request), request.params.id),
  );
}
