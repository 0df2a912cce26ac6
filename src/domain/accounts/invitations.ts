import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import type { Db, Tx } from '../../db/database.ts';
import type { InvitationsTable, Role } from '../../db/schema.ts';
import { normalizeEmail } from '../core/addresses.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import { randomBase62 } from '../core/secrets.ts';
import { queueSystemEmail } from '../sending/system-mail.ts';
import { presentAccount } from './accounts.ts';
import { checkRole } from './members.ts';
import { hasRole, requireMember, requireRole, roleLabel } from './membership.ts';
import { type Caller, presentProject } from './projects.ts';
import { openSession, type SessionMeta } from './sessions.ts';

export const INVITATION_TTL_DAYS = 7;
type InvitationRow = Selectable<InvitationsTable>;

const digest = (ctx: DomainContext, token: string) => ctx.secrets.hash(`invitation:${token}`);

function statusOf(row: InvitationRow) {
  if (row.accepted_at) return 'accepted' as const;
  if (row.expires_at <= new Date()) return 'expired' as const;
  return 'pending' as const;
}

function presentInvitation(row: InvitationRow) {
  return {
    id: row.id,
    object: 'invitation' as const,
    project_id: row.project_id,
    email: row.email,
    role: row.role,
    status: statusOf(row),
    expires_at: row.expires_at.toISOString(),
    created_at: row.created_at.toISOString(),
  };
}

/** The pending invitations of a project (Owners and Admins), newest first; expired ones are left out. */
export async function listInvitations(ctx: Pick<DomainContext, 'db'>, caller: Caller, projectId: string) {
  requireRole(await requireMember(ctx.db, caller.accountId, projectId), 'admin', 'Seeing invitations');
  const rows = await ctx.db
    .selectFrom('invitations')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('accepted_at', 'is', null)
    .where('expires_at', '>', new Date())
    .orderBy('created_at', 'desc')
    .execute();
  return rows.map(presentInvitation);
}

/** Withdraws a pending invitation (Owners and Admins; an Owner's invitation only by an Owner): its link stops working. */
export async function revokeInvitation(
  ctx: Pick<DomainContext, 'db'>,
  caller: Caller,
  projectId: string,
  id: string,
) {
  const actorRole = await requireMember(ctx.db, caller.accountId, projectId);
  requireRole(actorRole, 'admin', 'Withdrawing invitations');
  if (!isUuid(id)) throw new NotFoundError('Invitation');
  const row = await ctx.db
    .selectFrom('invitations')
    .selectAll()
    .where('id', '=', id)
    .where('project_id', '=', projectId)
    .where('accepted_at', 'is', null)
    .executeTakeFirst();
  if (!row) throw new NotFoundError('Invitation');
  if (row.role === 'owner') requireRole(actorRole, 'owner', "Withdrawing an Owner's invitation");
  await ctx.db.deleteFrom('invitations').where('id', '=', id).execute();
}

/**
 * Invites an address to a project with a role (Owners and Admins; only an Owner invites an Owner):
 * emails a link to `{app_url}/invite?token=...`, valid seven days. Inviting the same address again
 * replaces the pending invitation; inviting a member is 409.
 */
export async function inviteMember(
  ctx: DomainContext,
  caller: Caller,
  projectId: string,
  input: { email: unknown; role: unknown },
) {
  const actorRole = await requireMember(ctx.db, caller.accountId, projectId);
  requireRole(actorRole, 'admin', 'Inviting members');
  const email = normalizeEmail(input.email);
  const role = checkRole(input.role);
  if (role === 'owner') requireRole(actorRole, 'owner', 'Inviting an Owner');
  const member = await ctx.db
    .selectFrom('project_members as m')
    .innerJoin('accounts as a', 'a.id', 'm.account_id')
    .select('a.id')
    .where('m.project_id', '=', projectId)
    .where(sql<string>`lower(a.email)`, '=', email.toLowerCase())
    .executeTakeFirst();
  if (member)
    throw new ConflictError(`${email} is already a member of this project; change their role instead`);
  const token = randomBase62(43);
  return replaceInvitation(ctx, { projectId, email, role, invitedBy: caller.accountId }, token);
}

/** Writes the invitation (replacing a pending one to the address) and queues its email, in one transaction. */
async function replaceInvitation(
  ctx: DomainContext,
  invitation: { projectId: string; email: string; role: Role; invitedBy: string },
  token: string,
) {
  const { projectId, email, role } = invitation;
  const write = ctx.db.transaction().execute(async (tx) => {
    await tx
      .deleteFrom('invitations')
      .where('project_id', '=', projectId)
      .where(sql<string>`lower(email)`, '=', email.toLowerCase())
      .where('accepted_at', 'is', null)
      .execute();
    const row = await tx
      .insertInto('invitations')
      .values({
        project_id: projectId,
        email,
        role,
        token_hash: digest(ctx, token),
        invited_by: invitation.invitedBy,
        expires_at: new Date(Date.now() + INVITATION_TTL_DAYS * 86_400_000),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await sendInvitation(tx, ctx, row, token);
    return presentInvitation(row);
  });
  return write.catch((err) => {
    // the same address invited twice at the same instant: one wins
    if ((err as { code?: string }).code === '23505')
      throw new ConflictError(`${email} is being invited by another request; try again`);
    throw err;
  });
}

async function sendInvitation(
  tx: Tx,
  ctx: Pick<DomainContext, 'config' | 'db'>,
  row: InvitationRow,
  token: string,
) {
  const about = await aboutInvitation(tx, row);
  await queueSystemEmail(tx, ctx, {
    to: row.email,
    subject: `${about.inviter?.name ?? 'A project admin'} invited you to ${about.project.name} on Posthorn`,
    text: [
      `Hello,`,
      '',
      `${about.inviter?.name ?? 'Someone'} (${about.inviter?.email ?? 'a project admin'}) invited you to join the project "${about.project.name}" on Posthorn as ${roleLabel(row.role)}. To accept, open:`,
      '',
      `${ctx.config.appUrl}/invite?token=${token}`,
      '',
      `The link expires in ${INVITATION_TTL_DAYS} days. If you were not expecting it, ignore this message.`,
    ].join('\n'),
  });
}

/** The project and the inviter an invitation names. */
async function aboutInvitation(db: Db | Tx, row: InvitationRow) {
  const project = await db
    .selectFrom('projects')
    .select(['id', 'name'])
    .where('id', '=', row.project_id)
    .executeTakeFirstOrThrow();
  const inviter = row.invited_by
    ? await db
        .selectFrom('accounts')
        .select(['name', 'email'])
        .where('id', '=', row.invited_by)
        .executeTakeFirst()
    : undefined;
  return { project, inviter: inviter ?? null };
}

async function findInvitation(ctx: DomainContext, token: string) {
  if (!/^[0-9A-Za-z]{20,100}$/.test(token)) throw new NotFoundError('Invitation');
  const row = await ctx.db
    .selectFrom('invitations')
    .selectAll()
    .where('token_hash', '=', digest(ctx, token))
    .executeTakeFirst();
  if (!row) throw new NotFoundError('Invitation');
  return row;
}

/** What an invitation link is for: the project, the role, who invited, and whether it can still be used. */
export async function describeInvitation(ctx: DomainContext, token: string) {
  const row = await findInvitation(ctx, token);
  const about = await aboutInvitation(ctx.db, row);
  const account = await ctx.db
    .selectFrom('accounts')
    .select('id')
    .where(sql<string>`lower(email)`, '=', row.email.toLowerCase())
    .executeTakeFirst();
  return {
    ...presentInvitation(row),
    project: about.project,
    invited_by: about.inviter,
    account_exists: account !== undefined,
  };
}

export interface AcceptInput {
  accept_terms?: unknown;
  name?: unknown;
}

function refuseUnusable(row: InvitationRow) {
  const status = statusOf(row);
  if (status === 'accepted') throw new ValidationError('This invitation has already been accepted');
  if (status === 'expired')
    throw new ValidationError(
      `This invitation expired on ${row.expires_at.toISOString()}; ask for a new one`,
    );
}

/** A new account for the invited address: the link proves the address, the terms are the person's answer. */
async function createInvitedAccount(tx: Tx, row: InvitationRow, input: AcceptInput) {
  if (input.accept_terms !== true) {
    throw new ValidationError(
      '`accept_terms` must be true: the person creating the account has to accept the terms themselves',
    );
  }
  let name = row.email.slice(0, row.email.indexOf('@'));
  if (input.name !== undefined && input.name !== null) {
    if (typeof input.name !== 'string' || input.name.trim() === '' || input.name.length > 200)
      throw new ValidationError('`name` must be a non-empty string of at most 200 characters');
    name = input.name.trim();
  }
  const existing = await tx
    .selectFrom('accounts')
    .select('id')
    .where(sql<string>`lower(email)`, '=', row.email.toLowerCase())
    .executeTakeFirst();
  const exists = new ConflictError(`An account with ${row.email} already exists: sign in first, then accept`);
  if (existing) throw exists;
  try {
    return await tx
      .insertInto('accounts')
      .values({ email: row.email, name, terms_accepted_at: new Date(), email_confirmed_at: new Date() })
      .returningAll()
      .executeTakeFirstOrThrow();
  } catch (err) {
    // a signup with the same address committed in between
    if ((err as { code?: string }).code === '23505') throw exists;
    throw err;
  }
}

/**
 * Accepts an invitation. Signed in (as the invited address): joins the project. Not signed in:
 * creates the account for the invited address (`accept_terms` must be the person's own true) and
 * signs it in. Accepting never lowers a role the person already has.
 */
export async function acceptInvitation(
  ctx: DomainContext,
  token: string,
  signedIn: { accountId: string } | null,
  input: AcceptInput,
  meta: SessionMeta,
) {
  const found = await findInvitation(ctx, token);
  return ctx.db.transaction().execute(async (tx) => {
    const row = await tx
      .selectFrom('invitations')
      .selectAll()
      .where('id', '=', found.id)
      .forUpdate()
      .executeTakeFirstOrThrow();
    refuseUnusable(row);
    let account = signedIn
      ? await tx
          .selectFrom('accounts')
          .selectAll()
          .where('id', '=', signedIn.accountId)
          .executeTakeFirstOrThrow()
      : await createInvitedAccount(tx, row, input);
    if (signedIn && account.email.toLowerCase() !== row.email.toLowerCase()) {
      throw new ForbiddenError(
        `This invitation is for ${row.email}, and you are signed in as ${account.email}: sign out, or ask for an invitation to your address`,
      );
    }
    if (!account.email_confirmed_at) {
      account = await tx
        .updateTable('accounts')
        .set({ email_confirmed_at: new Date() })
        .where('id', '=', account.id)
        .returningAll()
        .executeTakeFirstOrThrow();
    }
    const role = await joinWithRole(tx, row.project_id, account.id, row.role);
    await tx
      .updateTable('invitations')
      .set({ accepted_at: new Date(), accepted_by: account.id })
      .where('id', '=', row.id)
      .execute();
    const project = await tx
      .selectFrom('projects')
      .selectAll()
      .where('id', '=', row.project_id)
      .executeTakeFirstOrThrow();
    return {
      object: 'invitation_acceptance' as const,
      account: presentAccount(account),
      project: presentProject(project, role),
      session: signedIn ? null : await openSession(tx, ctx, account.id, meta),
    };
  });
}

/** Adds the account with the invited role, or raises its role to it; never lowers one. */
async function joinWithRole(tx: Tx, projectId: string, accountId: string, invited: Role): Promise<Role> {
  const current = await tx
    .selectFrom('project_members')
    .select('role')
    .where('project_id', '=', projectId)
    .where('account_id', '=', accountId)
    .forUpdate()
    .executeTakeFirst();
  if (current && hasRole(current.role, invited)) return current.role;
  await tx
    .insertInto('project_members')
    .values({ project_id: projectId, account_id: accountId, role: invited })
    .onConflict((oc) => oc.columns(['project_id', 'account_id']).doUpdateSet({ role: invited }))
    .execute();
  return invited;
}
