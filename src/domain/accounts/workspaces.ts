import type { Selectable } from 'kysely';
import type { Tx } from '../../db/database.ts';
import type { WorkspacesTable } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { NotFoundError, ValidationError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import { findPlan, PLANS } from '../plans/plans.ts';
import { type Caller, checkName, insertProject, presentProject } from './projects.ts';

type WorkspaceRow = Selectable<WorkspacesTable>;

export function presentWorkspace(row: WorkspaceRow) {
  return {
    id: row.id,
    object: 'workspace' as const,
    name: row.name,
    plan: row.plan,
    created_at: row.created_at.toISOString(),
  };
}

export const STARTER_PROJECT_NAME = 'Default project';

/** Inserts a workspace owned by the account, on the configured default plan, with its starter project. */
export async function insertWorkspace(
  tx: Tx,
  ctx: Pick<DomainContext, 'config' | 'db'>,
  accountId: string,
  name: string,
) {
  const workspace = await tx
    .insertInto('workspaces')
    .values({ name, owner_account_id: accountId, plan: ctx.config.defaultPlan })
    .returningAll()
    .executeTakeFirstOrThrow();
  await tx
    .insertInto('workspace_members')
    .values({ workspace_id: workspace.id, account_id: accountId, role: 'owner' })
    .execute();
  const project = await insertProject(tx, workspace.id, accountId, STARTER_PROJECT_NAME);
  return { workspace, project };
}

/** POST /workspaces: a new billing boundary on the default plan (POSTHORN_DEFAULT_PLAN) with a starter project. */
export async function createWorkspace(ctx: DomainContext, caller: Caller, input: { name: unknown }) {
  const name = checkName(input.name, 'workspace');
  const { workspace, project } = await ctx.db
    .transaction()
    .execute((tx) => insertWorkspace(tx, ctx, caller.accountId, name));
  return { ...presentWorkspace(workspace), project: presentProject(project, 'owner') };
}

/** GET /workspaces: the caller's workspaces, with its role in each. */
export async function listWorkspaces(ctx: Pick<DomainContext, 'db'>, caller: Caller) {
  const rows = await ctx.db
    .selectFrom('workspaces as w')
    .innerJoin('workspace_members as m', 'm.workspace_id', 'w.id')
    .selectAll('w')
    .select('m.role')
    .where('m.account_id', '=', caller.accountId)
    .orderBy('w.created_at', 'asc')
    .execute();
  return rows.map((r) => ({ ...presentWorkspace(r), role: r.role }));
}

/** Operator command: moves a workspace (by id or exact name) to another plan. */
export async function setWorkspacePlan(ctx: Pick<DomainContext, 'db'>, workspace: string, planId: string) {
  if (!findPlan(planId)) {
    throw new ValidationError(`unknown plan "${planId}"; plans are ${PLANS.map((p) => p.id).join(', ')}`);
  }
  const matches = await ctx.db
    .selectFrom('workspaces')
    .select('id')
    .where((eb) => (isUuid(workspace) ? eb('id', '=', workspace) : eb('name', '=', workspace)))
    .execute();
  if (matches.length === 0) throw new NotFoundError('Workspace');
  if (matches.length > 1)
    throw new ValidationError(`${matches.length} workspaces are named "${workspace}"; give the id`);
  const rows = await ctx.db
    .updateTable('workspaces')
    .set({ plan: planId })
    .where('id', '=', matches[0].id)
    .returningAll()
    .execute();
  return presentWorkspace(rows[0]);
}
