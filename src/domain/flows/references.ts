import { sql } from 'kysely';
import { validateDefinition } from '../audience/segment-language.ts';
import { parseMailbox } from '../core/addresses.ts';
import type { DomainContext } from '../core/context.ts';
import { DomainError, SendRefusedError, ValidationError } from '../core/errors.ts';
import { checkFromAddress } from '../emails/send-checks.ts';
import { type ProjectFacts, sharedDefaultFrom } from '../plans/project-facts.ts';
import { checkMessageContent } from '../templates/message-checks.ts';
import { type ResolvedVersion, resolveVersions } from '../templates/send.ts';
import { findTemplate } from '../templates/templates.ts';
import { webhookPolicy } from '../webhooks/policy.ts';
import { checkWebhookUrl, resolveTarget } from '../webhooks/target.ts';
import type { FlowDefinition, SendStep, Step } from './definition.ts';
import { flowMessage } from './sends.ts';

/**
 * What a flow definition names must exist in its project and be usable there: lists, segments,
 * topics, published templates (with values for their variables), a sender on a verified domain (or the
 * shared default), webhook targets the configuration allows; and each send step's message checked
 * as a template is (templates/message-checks.ts). Checked on create, on every edit and again on
 * activation.
 */

/** A ValidationError or send refusal about a bare field (`url`, `from`), renamed to the step's field. */
function relocate(err: unknown, at: string, field: string): unknown {
  if (err instanceof ValidationError || err instanceof SendRefusedError)
    return new ValidationError(err.message.replace(`\`${field}\``, `\`${at}.${field}\``));
  return err;
}

function located<T>(at: string, field: string, run: () => T): T {
  try {
    return run();
  } catch (err) {
    throw relocate(err, at, field);
  }
}

/** The template version a send step names: the project's template, the version asked for published. */
async function templateVersion(
  ctx: DomainContext,
  projectId: string,
  step: SendStep,
  at: string,
): Promise<ResolvedVersion> {
  const id = step.template_id as string;
  const template = await findTemplate(ctx, projectId, id).catch((err) => {
    if (err instanceof DomainError && err.code === 'not_found')
      throw new ValidationError(`\`${at}.template_id\`: no template ${id} in this project`);
    throw err;
  });
  const version = step.template_version ?? template.latest_version;
  if (version === 0)
    throw new ValidationError(
      `\`${at}.template_id\`: template ${id} has no published version yet: publish it in Templates (POST /v1/templates/${id}/publish)`,
    );
  const row = await ctx.db
    .selectFrom('template_versions')
    .select('version')
    .where('template_id', '=', template.id)
    .where('version', '=', version)
    .executeTakeFirst();
  if (!row) throw new ValidationError(`\`${at}.template_version\`: template ${id} has no version ${version}`);
  const [resolved] = await resolveVersions(ctx, projectId, [{ id: template.id, version }]);
  return resolved;
}

/** Every id of `ids` names a row of `table` in this project (else 400 naming it). */
async function checkOwned(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  table: 'lists' | 'segments' | 'topics',
  ids: string[],
) {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return;
  const { rows } = await sql<{ id: string }>`select id from ${sql.table(table)}
    where project_id = ${projectId} and id = any(${unique}::uuid[])`.execute(ctx.db);
  const found = new Set(rows.map((r) => r.id));
  const missing = unique.find((id) => !found.has(id));
  if (missing !== undefined) throw new ValidationError(`no ${table.slice(0, -1)} ${missing} in this project`);
}

/** A send step's topic is one of the project's (else 400 naming the step's field). */
async function checkTopic(ctx: Pick<DomainContext, 'db'>, projectId: string, topicId: string, at: string) {
  const found = await ctx.db
    .selectFrom('topics')
    .select('id')
    .where('project_id', '=', projectId)
    .where('id', '=', topicId)
    .executeTakeFirst();
  if (!found)
    throw new ValidationError(`\`${at}.topic_id\`: no topic ${topicId} in this project (GET /v1/topics)`);
}

/** The conditions of a definition: its goal, a contact_updated trigger's, its branches'. */
function conditionsOf(def: FlowDefinition) {
  const groups = [def.goal, def.trigger.type === 'contact_updated' ? def.trigger.condition : null];
  for (const s of def.steps) if (s.type === 'branch') groups.push(...s.branches.map((b) => b.condition));
  return groups.filter((g) => g !== null).map((g) => validateDefinition(g));
}

/** The list ids a definition names: trigger, list steps, and the conditions' list facts. */
function listIdsOf(def: FlowDefinition): string[] {
  const ids: string[] = def.trigger.type === 'list_joined' ? [def.trigger.list_id] : [];
  for (const s of def.steps)
    if (s.type === 'update_contact') ids.push(...[s.join_list_id, s.leave_list_id].filter((x) => x !== null));
  for (const c of conditionsOf(def)) ids.push(...c.listIds);
  return ids;
}

/**
 * The checks that need the project: lists, segments and templates named are the project's, each
 * send step's sender is on a verified domain (or the shared default), webhook targets are allowed.
 * Gives the definition with each send step's `from` settled: its own or the flow's, else the
 * template's, else the shared default address (its name likewise, when the template gives one).
 */
export async function checkReferences(
  ctx: DomainContext,
  facts: ProjectFacts,
  def: FlowDefinition,
): Promise<FlowDefinition> {
  await checkOwned(ctx, facts.id, 'lists', listIdsOf(def));
  await checkOwned(
    ctx,
    facts.id,
    'topics',
    conditionsOf(def).flatMap((c) => c.topicIds),
  );
  await checkOwned(
    ctx,
    facts.id,
    'segments',
    def.trigger.type === 'segment_entered' ? [def.trigger.segment_id] : [],
  );
  // a webhook step's call is a delivery of the project's endpoint for its URL: the endpoints' rule
  // (on a server tried locally, this machine too, so a receiver beside it can be tried)
  const policy = webhookPolicy(ctx);
  const steps: Step[] = [];
  for (const [i, step] of def.steps.entries()) {
    const at = `steps[${i}]`;
    if (step.type === 'webhook') {
      const url = located(at, 'url', () => checkWebhookUrl(step.url, policy));
      await resolveTarget(url, policy).catch((err) => {
        throw relocate(err, at, 'url');
      });
      steps.push(step);
    } else if (step.type === 'send') {
      if (step.topic_id !== undefined) await checkTopic(ctx, facts.id, step.topic_id, at);
      const version = step.template_id === null ? null : await templateVersion(ctx, facts.id, step, at);
      // the message as the engine will make it, checked as a template is when saved
      await checkMessageContent(flowMessage(step, version), { at: `${at}.`, owner: facts.id });
      const fromTemplate = version?.from ? parseMailbox(version.from, `${at}.template_id`) : null;
      const from = step.from ?? fromTemplate?.address ?? sharedDefaultFrom(ctx);
      located(at, 'from', () => checkFromAddress(ctx, facts, from));
      steps.push({ ...step, from, from_name: step.from_name ?? (fromTemplate?.name || null) });
    } else steps.push(step);
  }
  return { ...def, steps };
}
