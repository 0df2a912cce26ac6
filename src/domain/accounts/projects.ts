import type { Selectable } from 'kysely';
import type { Db, Tx } from '../../db/database.ts';
import type { ProjectsTable, Role } from '../../db/schema.ts';
import { normalizeEmail } from '../core/addresses.ts';
import type { DomainContext } from '../core/context.ts';
import { NotFoundError, ValidationError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import { applyMemberChange, membersOf, requireMember } from './membership.ts';

type ProjectRow = Selectable<ProjectsTable>;
const ADMIN_ROLES: Role[] = ['owner', 'admin'];

/**
 * Who acts through the account API (an all-access key's or a dashboard session's account). The
 * functions that take a caller check its role themselves, with requireProjectAdmin.
 */
export interface Caller {
  accountId: string;
}

export function presentProject(row: ProjectRow, role?: Role) {
  return {
    id: row.id,
    object: 'project' as const,
    name: row.name,
    workspace_id: row.workspace_id,
    created_at: row.created_at.toISOString(),
    ...(role ? { role } : {}),
  };
}
export type PresentedProject = ReturnType<typeof presentProject>;

export function checkName(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.trim() === '')
    throw new ValidationError(`\`name\` is required: the ${what}'s name`);
  if (value.trim().length > 100) throw new ValidationError('`name` must be at most 100 characters');
  return value.trim();
}

function administeredProjects(db: Db, accountId: string) {
  return db
    .selectFrom('projects as p')
    .innerJoin('project_members as m', 'm.project_id', 'p.id')
    .where('m.account_id', '=', accountId)
    .where('m.role', 'in', ADMIN_ROLES);
}

/**
 * The project if the caller is its Owner or Admin; otherwise 404, so that another account's
 * project looks exactly like one that does not exist. The one check of "administers this project".
 */
export async function requireProjectAdmin(db: Db, caller: Caller, projectId: string, what = 'Project') {
  if (!isUuid(projectId)) throw new NotFoundError(what);
  const row = await administeredProjects(db, caller.accountId)
    .selectAll('p')
    .select('m.role')
    .where('p.id', '=', projectId)
    .executeTakeFirst();
  if (!row) throw new NotFoundError(what);
  return row;
}

/** Projects where the account is Owner or Admin: those an all-access key can act in. */
export async function adminProjects(db: Db, accountId: string) {
  return administeredProjects(db, accountId)
    .select(['p.id', 'p.name'])
    .orderBy('p.created_at', 'asc')
    .execute();
}

/** GET /projects: every project the caller belongs to, with its role there. */
export async function listProjects(
  ctx: Pick<DomainContext, 'db'>,
  caller: Caller,
): Promise<PresentedProject[]> {
  const rows = await ctx.db
    .selectFrom('projects as p')
    .innerJoin('project_members as m', 'm.project_id', 'p.id')
    .selectAll('p')
    .select('m.role')
    .where('m.account_id', '=', caller.accountId)
    .orderBy('p.created_at', 'asc')
    .execute();
  return rows.map((r) => presentProject(r, r.role));
}

/** Creates a project in a workspace; the creator becomes its Owner. */
export async function insertProject(tx: Tx, workspaceId: string, accountId: string, name: string) {
  const project = await tx
    .insertInto('projects')
    .values({ workspace_id: workspaceId, name })
    .returningAll()
    .executeTakeFirstOrThrow();
  await tx
    .insertInto('project_members')
    .values({ project_id: project.id, account_id: accountId, role: 'owner' })
    .execute();
  return project;
}

export interface CreateProjectInput {
  name: string;
  /** May be left out (or null) when the account administers exactly one workspace. */
  workspace_id?: string | null;
}

/** POST /projects: needs Owner or Admin of the workspace (the only one, when the account has one). */
export async function createProject(
  ctx: Pick<DomainContext, 'db'>,
  caller: Caller,
  input: CreateProjectInput,
) {
  const { accountId } = caller;
  const name = checkName(input.name, 'project');
  const workspaces = await ctx.db
    .selectFrom('workspace_members')
    .select(['workspace_id', 'role'])
    .where('account_id', '=', accountId)
    .where('role', 'in', ADMIN_ROLES)
    .execute();
  let workspaceId: string;
  if (input.workspace_id === undefined || input.workspace_id === null) {
    if (workspaces.length !== 1) {
      throw new ValidationError(
        `\`workspace_id\` is required: you administer ${workspaces.length} workspaces (${workspaces.map((w) => w.workspace_id).join(', ')})`,
      );
    }
    workspaceId = workspaces[0].workspace_id;
  } else {
    if (!workspaces.some((w) => w.workspace_id === input.workspace_id)) throw new NotFoundError('Workspace');
    workspaceId = input.workspace_id;
  }
  const project = await ctx.db.transaction().execute((tx) => insertProject(tx, workspaceId, accountId, name));
  return presentProject(project, 'owner');
}

/** The roles the account API's POST /projects/{id}/members gives; Owners come by invitation. */
export type MemberRole = Exclude<Role, 'owner'>;

/**
 * Adds an existing account to a project with a role, or changes the role of a member, under the
 * membership rules of applyMemberChange (the last Owner cannot be demoted).
 */
export async function addProjectMember(
  ctx: DomainContext,
  caller: Caller,
  projectId: string,
  input: { email: string; role: MemberRole },
) {
  const project = await requireProjectAdmin(ctx.db, caller, projectId);
  const email = normalizeEmail(input.email);
  if (!['admin', 'member'].includes(input.role))
    throw new ValidationError('`role` must be "admin" or "member"');
  const member = await ctx.db
    .selectFrom('accounts')
    .select(['id', 'email', 'name'])
    .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase()))
    .executeTakeFirst();
  if (!member) throw new NotFoundError('Account with that email');
  await ctx.db.transaction().execute((tx) =>
    applyMemberChange(tx, {
      projectId,
      actor: { accountId: caller.accountId, role: project.role },
      accountId: member.id,
      role: input.role,
    }),
  );
  return membersOf(ctx.db, projectId);
}

/** GET /projects/{id}/members: the members of a project the caller administers, with their roles. */
export async function listProjectMembers(ctx: Pick<DomainContext, 'db'>, caller: Caller, projectId: string) {
  // every member sees who else is on the project; only Owners and Admins change it
  await requireMember(ctx.db, caller.accountId, projectId);
  return membersOf(ctx.db, projectId);
}
