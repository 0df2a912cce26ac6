import type { Caller } from '../accounts/projects.ts';
import { findContact } from '../audience/contacts.ts';
import type { DomainContext } from '../core/context.ts';
import { NotFoundError, ValidationError } from '../core/errors.ts';
import { type AcceptedEmail, acceptEmails, type Sender } from '../emails/accept.ts';
import { sharedDefaultFrom } from '../plans/project-facts.ts';
import type { TemplateContact } from './render.ts';
import { renderInPool } from './render-pool.ts';
import { draftSource, resolveVersions } from './send.ts';

export interface PreviewInput {
  version?: number;
  variables?: Record<string, unknown>;
  /** Personalise for a contact of the project, by id or email. */
  contact?: string;
}

async function contactFor(ctx: Pick<DomainContext, 'db'>, projectId: string, idOrEmail: string | undefined) {
  if (idOrEmail === undefined) return null;
  const row = await findContact(ctx, projectId, idOrEmail).catch((err) => {
    if (err instanceof NotFoundError)
      throw new ValidationError('`contact`: no contact of this project has that id or email');
    throw err;
  });
  return {
    email: row.email,
    first_name: row.first_name,
    last_name: row.last_name,
    properties: row.properties,
  } as TemplateContact;
}

/** The draft, or a published version, rendered as one recipient would get it. */
async function renderFor(ctx: DomainContext, projectId: string, id: string, input: PreviewInput) {
  const contact = await contactFor(ctx, projectId, input.contact);
  if (input.version !== undefined) {
    const [version] = await resolveVersions(ctx, projectId, [{ id, version: input.version }]);
    return {
      version,
      rendered: await renderInPool(projectId, { source: version, given: input.variables, contact }),
    };
  }
  const { row, source } = await draftSource(ctx, projectId, id);
  return {
    version: { from: row.from_address, replyTo: row.reply_to, version: null },
    rendered: await renderInPool(projectId, { source, given: input.variables, contact }),
  };
}

/** POST /templates/{id}/preview: subject, HTML and text for the draft (or `version`). */
export async function previewTemplate(
  ctx: DomainContext,
  projectId: string,
  id: string,
  input: PreviewInput,
) {
  const { version, rendered } = await renderFor(ctx, projectId, id, input);
  return { object: 'template_preview' as const, version: version.version, ...rendered };
}

/** The addresses a test may go to: the caller's own and those of the project's members. */
async function testAddresses(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  caller: Caller,
): Promise<Set<string>> {
  const rows = await ctx.db
    .selectFrom('accounts')
    .select('email')
    .where((eb) =>
      eb.or([
        eb('id', '=', caller.accountId),
        eb(
          'id',
          'in',
          eb.selectFrom('project_members').select('account_id').where('project_id', '=', projectId),
        ),
      ]),
    )
    .execute();
  return new Set(rows.map((r) => r.email.toLowerCase()));
}

/**
 * POST /templates/{id}/test: the rendered draft (or version) with a "[Test]" subject, sent through
 * the one send path, only to the caller's own address or a project member's: never to anyone else.
 */
export async function sendTemplateTest(
  ctx: DomainContext,
  sender: Sender,
  caller: Caller,
  id: string,
  input: PreviewInput & { to: string },
): Promise<AcceptedEmail> {
  const allowed = await testAddresses(ctx, sender.facts.id, caller);
  if (!allowed.has(input.to.trim().toLowerCase()))
    throw new ValidationError(
      '`to`: a test goes only to your own address or a member of this project, so it cannot be used to send to anyone else',
    );
  const { version, rendered } = await renderFor(ctx, sender.facts.id, id, input);
  const result = await acceptEmails(
    ctx,
    sender,
    [
      {
        from: version.from ?? sharedDefaultFrom(ctx),
        to: input.to,
        ...(version.replyTo ? { reply_to: version.replyTo } : {}),
        subject: `[Test] ${rendered.subject}`.slice(0, 998),
        html: rendered.html,
        text: rendered.text,
      },
    ],
    { batch: false },
  );
  return result.emails[0];
}
