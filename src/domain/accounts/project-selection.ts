import { sql } from 'kysely';
import type { Role } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { NotFoundError, ValidationError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import type { AuthenticatedKey } from '../keys/service.ts';
import { memberProjects, requireMember } from './membership.ts';
import { adminProjects, requireProjectAdmin } from './projects.ts';

interface Choice {
  id: string;
  name: string;
}

/**
 * The one way a project is chosen for a project-API call by a caller that may act in several: the
 * project named by `X-Project-Id` (checked by `named`), or the only one there is; with several and no
 * header, a 400 that lists them.
 */
async function chooseProject<T extends Choice>(
  header: string | undefined,
  named: (projectId: string) => Promise<T>,
  all: () => Promise<T[]>,
  who: { none: string; several: string },
): Promise<T> {
  if (header !== undefined && header !== '') {
    if (!isUuid(header)) throw new ValidationError('Header `X-Project-Id` must be a project id (a UUID)');
    return named(header);
  }
  const projects = await all();
  if (projects.length === 1) return projects[0];
  if (projects.length === 0) throw new NotFoundError(`Project (${who.none})`);
  throw new ValidationError(
    `Header \`X-Project-Id\` is required: ${who.several} ${projects.length} projects: ${projects
      .map((p) => `${p.name} (${p.id})`)
      .join(', ')}`,
  );
}

/**
 * An account's default project: the starter project of the first workspace it owns (the one made
 * at sign-up), while its user still administers it; otherwise the oldest project it administers
 * (of its own workspaces first). 404 when it administers none.
 */
export async function defaultProject(ctx: Pick<DomainContext, 'db'>, accountId: string): Promise<string> {
  const row = await ctx.db
    .selectFrom('projects as p')
    .innerJoin('project_members as m', 'm.project_id', 'p.id')
    .innerJoin('workspaces as w', 'w.id', 'p.workspace_id')
    .select('p.id')
    .where('m.account_id', '=', accountId)
    .where('m.role', 'in', ['owner', 'admin'])
    .orderBy(sql`w.owner_account_id = ${accountId}`, 'desc')
    .orderBy('w.created_at', 'asc')
    .orderBy('p.created_at', 'asc')
    .limit(1)
    .executeTakeFirst();
  if (!row) throw new NotFoundError("Project (this key's user administers no project)");
  return row.id;
}

/**
 * The project a project-API call acts in. A project key acts in its own project. An all-access key
 * acts in the one project its user administers, or in the one named by `X-Project-Id`; naming a
 * project the user does not administer is 404, like one that does not exist. With `orDefault` (the
 * Resend door, whose clients send no such header) a key that names none acts in its account's
 * default project instead of being asked to choose.
 */
export async function selectProject(
  ctx: Pick<DomainContext, 'db'>,
  key: AuthenticatedKey,
  header: string | undefined,
  opts: { orDefault?: boolean } = {},
): Promise<string> {
  if (key.scope === 'project') return key.projectId as string;
  if (opts.orDefault && (header === undefined || header === '')) return defaultProject(ctx, key.accountId);
  const chosen = await chooseProject(
    header,
    async (id) => requireProjectAdmin(ctx.db, key, id),
    () => adminProjects(ctx.db, key.accountId),
    { none: "this key's user administers no project", several: 'this all-access key can act in' },
  );
  return chosen.id;
}

/**
 * The project a dashboard session acts in, and the person's role there: any project the person
 * belongs to (whatever the role), chosen like an all-access key's; another project is 404.
 */
export async function selectSessionProject(
  ctx: Pick<DomainContext, 'db'>,
  accountId: string,
  header: string | undefined,
): Promise<{ projectId: string; role: Role }> {
  const chosen = await chooseProject(
    header,
    async (id) => ({ id, name: '', role: await requireMember(ctx.db, accountId, id) }),
    () => memberProjects(ctx.db, accountId),
    { none: 'you belong to no project', several: 'you belong to' },
  );
  return { projectId: chosen.id, role: chosen.role };
}
