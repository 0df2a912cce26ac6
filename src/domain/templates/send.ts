import type { Selectable } from 'kysely';
import type { TemplateData, TemplateVersionsTable } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { NotFoundError, ValidationError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import type { JobLane } from './fair-pool.ts';
import { lookupForSends } from './lookups.ts';
import { storedSource } from './message-checks.ts';
import type { Rendered, RenderSource } from './render.ts';
import { resolveVariables } from './render.ts';
import { renderEach } from './render-pool.ts';
import { findTemplate } from './templates.ts';

type VersionRow = Selectable<TemplateVersionsTable>;

/** A send's reference to a template: a published version (the latest when none is named). */
export interface TemplateRef {
  id: string;
  version?: number;
  variables?: Record<string, unknown>;
}

/** A published version, ready to render; what an email records it was rendered from. */
export interface ResolvedVersion extends RenderSource {
  templateId: string;
  version: number;
  from: string | null;
  replyTo: string | null;
}

// published versions never change: kept by id and number, checked against the project on each use
const VERSION_CACHE_SIZE = 1000;
const versions = new Map<string, VersionRow>();

function resolved(row: VersionRow): ResolvedVersion {
  return {
    cacheKey: `${row.template_id}@${row.version}`,
    templateId: row.template_id,
    version: row.version,
    subject: row.subject,
    compiled_html: row.compiled_html,
    text_body: row.text_body,
    variables: row.variables,
    from: row.from_address,
    replyTo: row.reply_to,
  };
}

/**
 * The published versions a set of sends names, in one or two queries: the templates named (each must
 * exist in the project: a deleted one is refused even when its versions are cached) with their latest
 * version, then every version not yet cached. Another project's template, an unknown one, and a
 * template never published are refused naming the template. `stored`: versions that accepted emails
 * recorded, rendered again at delivery or when read; they outlive a deleted template.
 */
export async function resolveVersions(
  ctx: DomainContext,
  projectId: string,
  refs: TemplateRef[],
  { stored = false, known }: { stored?: boolean; known?: Map<string, number> } = {},
): Promise<ResolvedVersion[]> {
  // what cannot be an id is not echoed back (it may be any length)
  for (const ref of refs) if (!isUuid(ref.id)) throw new NotFoundError('Template');
  const latest = known ?? new Map<string, number>();
  if (!stored && !known) {
    const named = await ctx.db
      .selectFrom('templates')
      .select(['id', 'latest_version'])
      .where('project_id', '=', projectId)
      .where('id', 'in', [...new Set(refs.map((r) => r.id))])
      .execute();
    for (const r of named) latest.set(r.id, r.latest_version);
  }
  const wanted = refs.map((r) => {
    const last = latest.get(r.id);
    if (!stored && last === undefined) throw new NotFoundError(`Template ${r.id}`);
    const version = r.version ?? last;
    if (version === undefined || version === 0)
      throw new ValidationError(
        `Template ${r.id} has no published version yet: publish it in Templates (POST /v1/templates/${r.id}/publish)`,
      );
    return { id: r.id, version, key: `${r.id}@${version}` };
  });
  const missing = wanted.filter((w) => !versions.has(w.key));
  if (missing.length > 0) {
    const rows = await ctx.db
      .selectFrom('template_versions')
      .selectAll()
      .where('project_id', '=', projectId)
      .where((eb) =>
        eb.or(missing.map((m) => eb.and([eb('template_id', '=', m.id), eb('version', '=', m.version)]))),
      )
      .execute();
    for (const row of rows) {
      if (versions.size >= VERSION_CACHE_SIZE) versions.delete(versions.keys().next().value as string);
      versions.set(`${row.template_id}@${row.version}`, row);
    }
  }
  return wanted.map((w) => {
    const row = versions.get(w.key);
    if (!row || row.project_id !== projectId)
      throw new NotFoundError(`Template ${w.id} version ${w.version}`);
    return resolved(row);
  });
}

/** The draft of a template as a render source (its cache key changes with every edit). */
export async function draftSource(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  const row = await findTemplate(ctx, projectId, id);
  return {
    row,
    source: {
      cacheKey: `${row.id}~${row.updated_at.getTime()}`,
      subject: row.subject,
      compiled_html: row.compiled_html,
      text_body: row.text_body,
      variables: row.variables,
    } satisfies RenderSource,
  };
}

export type { Rendered };

/**
 * Sends that name a template instead of subject/html/text: each is rendered from its published
 * version for its first recipient (the request's variables, and the contact when one exists), and
 * takes the version's default `from` and `reply_to` when it gives none. The rendered message then
 * goes through the same checks as any other; the version it came from is returned beside it.
 */
export async function expandTemplates<T extends TemplateSend>(
  ctx: DomainContext,
  projectId: string,
  inputs: T[],
  label: (i: number) => string,
  /** A subject given beside the template replaces the template's (Resend's door), instead of being refused. */
  { subjectWins = false }: { subjectWins?: boolean } = {},
): Promise<{ inputs: T[]; used: (TemplateUse | null)[] }> {
  const withTemplate = inputs.flatMap((input, i) => (input.template ? [{ input, i }] : []));
  if (withTemplate.length === 0) return { inputs, used: inputs.map(() => null) };
  const beside = subjectWins ? '`html`/`text`' : '`subject`/`html`/`text`';
  for (const { input, i } of withTemplate)
    if ((!subjectWins && input.subject !== undefined) || input.html !== undefined || input.text !== undefined)
      throw new ValidationError(`${label(i)}Give either \`template\` or ${beside}, not both`);
  const firstRecipient = (input: T) => {
    const first = Array.isArray(input.to) ? input.to[0] : input.to;
    return /<([^<>]+)>\s*$/.exec(first ?? '')?.[1] ?? first ?? '';
  };
  // the templates and the contacts in one query, shared with concurrent sends
  const refs = withTemplate.map(({ input }) => input.template as TemplateRef);
  for (const ref of refs) if (!isUuid(ref.id)) throw new NotFoundError('Template');
  const found = await lookupForSends(ctx.pool, {
    projectId,
    templateIds: [...new Set(refs.map((r) => r.id))],
    emails: [...new Set(withTemplate.map(({ input }) => firstRecipient(input).trim().toLowerCase()))],
  });
  const versionsUsed = await resolveVersions(ctx, projectId, refs, { known: found.latest });
  const contacts = found.contacts;

  const out = [...inputs];
  const used: (TemplateUse | null)[] = inputs.map(() => null);
  const data: TemplateData[] = withTemplate.map(({ input, i }, n) => {
    try {
      return {
        variables: resolveVariables(versionsUsed[n].variables, input.template?.variables),
        contact: contacts.get(firstRecipient(input).trim().toLowerCase()) ?? null,
      };
    } catch (err) {
      if (err instanceof ValidationError) throw new ValidationError(`${label(i)}${err.message}`);
      throw err;
    }
  });
  // checked (and its subject kept) now, in the pool; HTML and text are rendered again when it leaves
  const outcomes = await renderEach(
    projectId,
    withTemplate.map((_, n) => ({
      source: versionsUsed[n],
      given: data[n].variables,
      contact: data[n].contact,
      deriveText: false,
    })),
  );
  withTemplate.forEach(({ input, i }, n) => {
    const version = versionsUsed[n];
    const rendered = outcomes[n];
    if ('error' in rendered) throw new ValidationError(`${label(i)}${rendered.error}`);
    out[i] = {
      ...input,
      from: input.from ?? version.from ?? undefined,
      reply_to: input.reply_to ?? version.replyTo ?? undefined,
      subject: (subjectWins ? input.subject : undefined) ?? rendered.subject,
      html: rendered.html,
      text: rendered.text || undefined,
    };
    used[i] = { templateId: version.templateId, version: version.version, data: data[n] };
  });
  return { inputs: out, used };
}

/** What an accepted email records of its template: the version, and the data it renders with. */
export interface TemplateUse {
  templateId: string;
  version: number;
  data: TemplateData;
}

/**
 * The HTML and text of stored template emails, rendered again from their version and data at
 * delivery (or when read): the same bytes as when they were accepted and checked.
 */
export async function renderStored(
  ctx: DomainContext,
  rows: {
    id: string;
    project_id: string;
    template_id: string | null;
    template_version: number | null;
    template_data: TemplateData | null;
  }[],
  lane: JobLane = 'foreground',
): Promise<Map<string, Rendered | { error: string }>> {
  const out = new Map<string, Rendered | { error: string }>();
  const byProject = new Map<string, typeof rows>();
  for (const row of rows) {
    if (row.template_id === null || row.template_version === null || row.template_data === null) continue;
    byProject.set(row.project_id, [...(byProject.get(row.project_id) ?? []), row]);
  }
  for (const [projectId, mine] of byProject) {
    const versions = await resolveVersions(
      ctx,
      projectId,
      mine.map((r) => ({ id: r.template_id as string, version: r.template_version as number })),
      { stored: true },
    );
    // it rendered when accepted; a failure now (a render limit on a busy machine) fails that message
    // alone, with the reason, instead of the whole delivery job
    const outcomes = await renderEach(
      projectId,
      mine.map((row, i) => {
        const data = row.template_data as TemplateData;
        return { source: storedSource(versions[i], data), given: data.variables, contact: data.contact };
      }),
      lane,
    );
    for (const [i, row] of mine.entries()) out.set(row.id, outcomes[i]);
  }
  return out;
}

/** What expandTemplates reads of a send. */
export interface TemplateSend {
  from?: string;
  to: string | string[];
  reply_to?: string | string[];
  subject?: string;
  html?: string;
  text?: string;
  template?: TemplateRef;
}
