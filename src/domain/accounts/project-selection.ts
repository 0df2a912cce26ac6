import type { DomainContext } from '../core/context.ts';
import { NotFoundError, ValidationError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import type { AuthenticatedKey } from '../keys/service.ts';
import { adminProjects, requireProjectAdmin } from './projects.ts';

/**
 * The project a project-API call acts in. A project key acts in its own project. An all-access key
 * acts in the one project its user administers, or in the one named by `X-Project-Id`; naming a
 * project the user does not administer is 404, like one that does not exist.
 */
export async function selectProject(
  ctx: DomainContext,
  key: AuthenticatedKey,
  header: string | undefined,
): Promise<string> {
  if (key.scope === 'project') return key.projectId as string;
  if (header !== undefined && header !== '') {
    if (!isUuid(header)) throw new ValidationError('Header `X-Project-Id` must be a project id (a UUID)');
    await requireProjectAdmin(ctx.db, key, header);
    return header;
  }
  const projects = await adminProjects(ctx.db, key.accountId);
  if (projects.length === 1) return projects[0].id;
  if (projects.length === 0) throw new NotFoundError("Project (this key's user administers no project)");
  throw new ValidationError(
    `Header \`X-Project-Id\` is required: this all-access key can act in ${projects.length} projects: ${projects
      .map((p) => `${p.name} (${p.id})`)
      .join(', ')}`,
  );
}
