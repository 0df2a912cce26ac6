import { randomUUID } from 'node:crypto';
import type { Selectable } from 'kysely';
import type { TemplatesTable, TemplateVersionsTable } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError, NotFoundError, ValidationError } from '../core/errors.ts';
import { findInProject } from '../core/find.ts';
import { isUuid } from '../core/ids.ts';
import { type CheckedContent, checkContent, type TemplateContentInput } from './content.ts';
import { STARTERS } from './starters.ts';

type TemplateRow = Selectable<TemplatesTable>;
type VersionRow = Selectable<TemplateVersionsTable>;

export interface CreateTemplateInput extends Partial<TemplateContentInput> {
  name: string;
  /** Copy a built-in starter (welcome, receipt, password_reset, newsletter); given fields override it. */
  starter?: string;
}

export type UpdateTemplateInput = Partial<TemplateContentInput> & { name?: string };

function presentContent(row: CheckedContent) {
  return {
    subject: row.subject,
    mjml: row.mjml,
    html: row.html,
    text: row.text_body,
    preheader: row.preheader,
    from: row.from_address,
    reply_to: row.reply_to,
    variables: row.variables,
  };
}

export function presentTemplate(row: TemplateRow) {
  return {
    id: row.id,
    object: 'template' as const,
    name: row.name,
    ...presentContent(row),
    latest_version: row.latest_version === 0 ? null : row.latest_version,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function presentVersion(row: VersionRow) {
  return {
    object: 'template_version' as const,
    template_id: row.template_id,
    version: row.version,
    ...presentContent(row),
    published_at: row.published_at.toISOString(),
  };
}

function checkName(name: unknown): string {
  if (typeof name !== 'string' || name.trim() === '' || name.length > 200)
    throw new ValidationError('`name` must be 1 to 200 characters');
  return name.trim();
}

const duplicateName = (err: unknown, name: string): never => {
  if ((err as { code?: string }).code === '23505')
    throw new ConflictError(`A template named "${name}" already exists in this project`);
  throw err;
};

export function findTemplate(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  id: string,
): Promise<TemplateRow> {
  return findInProject(ctx.db, 'templates', 'Template', projectId, id);
}

/** A template by its id or by its name (unique in a project: what Resend's door calls its alias). */
export async function findTemplateByIdOrName(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  idOrName: string,
): Promise<TemplateRow> {
  if (isUuid(idOrName)) return findTemplate(ctx, projectId, idOrName);
  const row = await ctx.db
    .selectFrom('templates')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('name', '=', idOrName)
    .executeTakeFirst();
  if (!row) throw new NotFoundError('Template');
  return row;
}

/** GET /templates: every template of the project (a small set: not paginated). */
export async function listTemplates(ctx: Pick<DomainContext, 'db'>, projectId: string) {
  const rows = await ctx.db
    .selectFrom('templates')
    .selectAll()
    .where('project_id', '=', projectId)
    .orderBy('created_at', 'asc')
    .execute();
  return { data: rows.map(presentTemplate) };
}

/** GET /templates/{id}: the draft, and which version was published last. */
export async function getTemplate(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  return presentTemplate(await findTemplate(ctx, projectId, id));
}

/** POST /templates: a new draft, checked as a whole (MJML, Liquid, declared variables, limits). */
export async function createTemplate(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  input: CreateTemplateInput,
) {
  const name = checkName(input.name);
  let base: Partial<TemplateContentInput> = {};
  if (input.starter !== undefined) {
    const starter = STARTERS.find((s) => s.key === input.starter);
    if (!starter)
      throw new ValidationError(
        `\`starter\` must be one of ${STARTERS.map((s) => s.key).join(', ')}; GET /v1/templates/starters lists them`,
      );
    base = {
      subject: starter.subject,
      mjml: starter.mjml,
      preheader: starter.preheader,
      variables: starter.variables,
    };
  }
  const merged = { ...base, ...definedOf(input) };
  if (merged.subject === undefined) throw new ValidationError('Field `subject` is required');
  const content = await checkContent(merged as TemplateContentInput, projectId);
  const row = await ctx.db
    .insertInto('templates')
    .values({
      id: randomUUID(),
      project_id: projectId,
      name,
      ...content,
      variables: JSON.stringify(content.variables),
    })
    .returningAll()
    .executeTakeFirstOrThrow()
    .catch((err) => duplicateName(err, name));
  return presentTemplate(row);
}

/** The fields a request gave (an explicit null stays: it clears the field). */
function definedOf(input: Partial<TemplateContentInput>): Partial<TemplateContentInput> {
  const keys = ['subject', 'mjml', 'html', 'text', 'preheader', 'from', 'reply_to', 'variables'] as const;
  return Object.fromEntries(keys.filter((k) => input[k] !== undefined).map((k) => [k, input[k]]));
}

/** PATCH /templates/{id}: edits the draft (published versions never change); checked as a whole again. */
export async function updateTemplate(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  id: string,
  input: UpdateTemplateInput,
) {
  const current = await findTemplate(ctx, projectId, id);
  const name = input.name === undefined ? current.name : checkName(input.name);
  const changes = definedOf(input);
  // giving one kind of body replaces the other (giving both is refused by the content check)
  const gaveMjml = typeof changes.mjml === 'string';
  const gaveHtml = typeof changes.html === 'string';
  if (gaveMjml && !gaveHtml) changes.html = null;
  if (gaveHtml && !gaveMjml) changes.mjml = null;
  const content = await checkContent(
    { ...presentContent(current), ...changes } as TemplateContentInput,
    current.project_id,
  );
  const row = await ctx.db
    .updateTable('templates')
    .set({ name, ...content, variables: JSON.stringify(content.variables), updated_at: new Date() })
    .where('id', '=', current.id)
    .returningAll()
    .executeTakeFirstOrThrow()
    .catch((err) => duplicateName(err, name));
  return presentTemplate(row);
}

/** POST /templates/{id}/publish: freezes the draft as the next immutable version. */
export async function publishTemplate(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  if (!isUuid(id)) throw new NotFoundError('Template');
  return ctx.db.transaction().execute(async (tx) => {
    const current = await tx
      .updateTable('templates')
      .set((eb) => ({ latest_version: eb('latest_version', '+', 1) }))
      .where('id', '=', id)
      .where('project_id', '=', projectId)
      .returningAll()
      .executeTakeFirst();
    if (!current) throw new NotFoundError('Template');
    const { id: _id, name: _n, latest_version, created_at: _c, updated_at: _u, ...content } = current;
    const version = await tx
      .insertInto('template_versions')
      .values({
        ...content,
        template_id: id,
        version: latest_version,
        variables: JSON.stringify(content.variables),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return presentVersion(version);
  });
}

/** GET /templates/{id}/versions: every published version, newest first. */
export async function listVersions(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  const template = await findTemplate(ctx, projectId, id);
  const rows = await ctx.db
    .selectFrom('template_versions')
    .selectAll()
    .where('template_id', '=', template.id)
    .orderBy('version', 'desc')
    .execute();
  return { data: rows.map(presentVersion) };
}

/** DELETE /templates/{id}: refused (409) while a scheduled email (later: a campaign or flow) uses it. */
export async function deleteTemplate(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  const template = await findTemplate(ctx, projectId, id);
  const scheduled = await ctx.db
    .selectFrom('emails')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('template_id', '=', template.id)
    .where('scheduled_at', 'is not', null) // the emails_template_scheduled index (migration 0026)
    .where('status', '=', 'scheduled')
    .executeTakeFirstOrThrow();
  if (scheduled.n > 0)
    throw new ConflictError(
      `Template "${template.name}" is used by ${scheduled.n} scheduled email${scheduled.n > 1 ? 's' : ''}: cancel ${scheduled.n > 1 ? 'them' : 'it'} first`,
    );
  await ctx.db.deleteFrom('templates').where('id', '=', template.id).execute();
}

/** The built-in starters a project can copy (`POST /templates` with `starter`). */
export function listStarters() {
  return {
    data: STARTERS.map((s) => ({
      object: 'template_starter' as const,
      key: s.key,
      name: s.name,
      description: s.description,
      subject: s.subject,
      preheader: s.preheader,
      mjml: s.mjml,
      variables: s.variables,
    })),
  };
}
