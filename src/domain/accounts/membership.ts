import type { Db, Tx } from '../../db/database.ts';
import type { Role } from '../../db/schema.ts';
import { ConflictError, NotFoundError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import { pauseFlowsBeyondRights } from '../flows/webhook-rights.ts';
import { revokeKeysMadeBy } from '../keys/creators.ts';
import { requireRole } from './roles.ts';

export { hasRole, ROLES, requireRole, roleLabel } from './roles.ts';

/** The account's role in a project; 404 when it is not a member (like a project that does not exist). */
export async function requireMember(db: Db, accountId: string, projectId: string, what = 'Project') {
  if (!isUuid(projectId)) throw new NotFoundError(what);
  const row = await db
    .selectFrom('project_members')
    .select('role')
    .where('project_id', '=', projectId)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  if (!row) throw new NotFoundError(what);
  return row.role;
}

/** Every project the account belongs to, with its role, oldest first. */
export async function memberProjects(db: Db, accountId: string) {
  return db
    .selectFrom('projects as p')
    .innerJoin('project_members as m', 'm.project_id', 'p.id')
    .select(['p.id', 'p.name', 'm.role'])
    .where('m.account_id', '=', accountId)
    .orderBy('p.created_at', 'asc')
    .execute();
}

/** The members of a project with their roles, in the order they joined. */
export async function membersOf(db: Db, projectId: string, accountId?: string) {
  let query = db
    .selectFrom('project_members as m')
    .innerJoin('accounts as a', 'a.id', 'm.account_id')
    .select(['a.id', 'a.email', 'a.name', 'm.role', 'm.created_at'])
    .where('m.project_id', '=', projectId);
  if (accountId) query = query.where('m.account_id', '=', accountId);
  const rows = await query.orderBy('m.created_at', 'asc').execute();
  return rows.map((r) => ({
    account_id: r.id,
    object: 'project_member' as const,
    email: r.email,
    name: r.name,
    role: r.role,
    created_at: r.created_at.toISOString(),
  }));
}

export interface MemberChange {
  projectId: string;
  /** Who asks, with their role in the project. */
  actor: { accountId: string; role: Role };
  /** Whose membership changes (added when not a member yet). */
  accountId: string;
  /** The new role, or null to remove the member. */
  role: Role | null;
  /**
   * On removal (or leaving): keep the project keys the member made here working. By default they
   * are revoked with the membership (`keys/creators.ts`).
   */
  keepKeys?: boolean;
}

/**
 * The one rule for changing a membership, shared by every door: Owners and Admins manage members,
 * only an Owner grants, changes or removes the Owner role, anyone may leave, and the last Owner can
 * neither leave nor be demoted (409). The project's Owner rows are locked, so two Owners demoting
 * each other at once cannot leave the project without one. A member who goes takes the project keys
 * they made with them (revoked in the same transaction) unless `keepKeys`, and what only their old
 * rights allowed stops with the change: flows whose webhook steps they set up are paused
 * (flows/webhook-rights.ts).
 */
export async function applyMemberChange(tx: Tx, change: MemberChange): Promise<void> {
  const { projectId, actor, accountId, role } = change;
  const owners = await tx
    .selectFrom('project_members')
    .select('account_id')
    .where('project_id', '=', projectId)
    .where('role', '=', 'owner')
    .forUpdate()
    .execute();
  const current = await tx
    .selectFrom('project_members')
    .select('role')
    .where('project_id', '=', projectId)
    .where('account_id', '=', accountId)
    .forUpdate()
    .executeTakeFirst();
  const leaving = role === null && actor.accountId === accountId;
  if (!leaving) requireRole(actor.role, 'admin', 'Managing members');
  if (!current && role === null) throw new NotFoundError('Member');
  if (!leaving && (current?.role === 'owner' || role === 'owner'))
    requireRole(actor.role, 'owner', 'Granting, changing or removing the Owner role');
  if (current?.role === 'owner' && role !== 'owner' && owners.length <= 1) {
    throw new ConflictError(
      'The last Owner of a project cannot leave or be demoted: make another member Owner first',
    );
  }
  if (role === null) {
    await tx
      .deleteFrom('project_members')
      .where('project_id', '=', projectId)
      .where('account_id', '=', accountId)
      .execute();
    if (!change.keepKeys) await revokeKeysMadeBy(tx, projectId, accountId);
  } else
    await tx
      .insertInto('project_members')
      .values({ project_id: projectId, account_id: accountId, role })
      .onConflict((oc) => oc.columns(['project_id', 'account_id']).doUpdateSet({ role }))
      .execute();
  await pauseFlowsBeyondRights(tx, projectId, accountId);
}
