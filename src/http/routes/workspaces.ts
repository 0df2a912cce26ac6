import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/context.ts';
import { listProjectKeys } from '../../domain/keys/service.ts';
import {
  addProjectMember,
  createProject,
  listProjectMembers,
  listProjects,
  presentProject,
  requireProjectAdmin,
} from '../../domain/projects.ts';
import { createWorkspace, listWorkspaces } from '../../domain/workspaces.ts';
import { authOf } from '../auth.ts';
import {
  ApiKeySchema,
  bearerSecurity,
  errors,
  list,
  ProjectParams,
  ProjectSchema,
  Uuid,
  WorkspaceSchema,
} from '../schemas.ts';

const MemberSchema = Type.Object({
  account_id: Uuid,
  object: Type.Literal('project_member'),
  email: Type.String(),
  name: Type.String(),
  role: Type.String(),
  created_at: Type.String(),
});

/** Account API: workspaces, projects and their members (all-access keys). */
export async function workspaceRoutes(app: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const account = { auth: 'account' as const };

  app.get(
    '/workspaces',
    {
      config: account,
      schema: {
        tags: ['account API'],
        summary: 'List your workspaces',
        security: bearerSecurity,
        response: { 200: list(WorkspaceSchema), ...errors(401) },
      },
    },
    async (request) => ({ data: await listWorkspaces(ctx, authOf(request).accountId) }),
  );

  app.post(
    '/workspaces',
    {
      config: account,
      schema: {
        tags: ['account API'],
        summary: 'Create a workspace (a billing boundary) with its starter project',
        security: bearerSecurity,
        body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) }),
        response: {
          200: Type.Object({ ...WorkspaceSchema.properties, project: ProjectSchema }),
          ...errors(400, 401),
        },
      },
    },
    async (request) => createWorkspace(ctx, authOf(request).accountId, request.body as { name: string }),
  );

  app.get(
    '/projects',
    {
      config: account,
      schema: {
        tags: ['account API'],
        summary: 'List the projects you belong to, with your role',
        security: bearerSecurity,
        response: { 200: list(ProjectSchema), ...errors(401) },
      },
    },
    async (request) => ({ data: await listProjects(ctx.db, authOf(request).accountId) }),
  );

  app.post(
    '/projects',
    {
      config: account,
      schema: {
        tags: ['account API'],
        summary: 'Create a project in a workspace you administer',
        description: '`workspace_id` may be omitted when you administer exactly one workspace.',
        security: bearerSecurity,
        body: Type.Object({
          name: Type.String({ minLength: 1, maxLength: 100 }),
          workspace_id: Type.Optional(Type.String()),
        }),
        response: { 200: ProjectSchema, ...errors(400, 401, 404) },
      },
    },
    async (request) => createProject(ctx, authOf(request).accountId, request.body as { name: string }),
  );

  app.get(
    '/projects/:project_id',
    {
      config: account,
      schema: {
        tags: ['account API'],
        summary: 'A project you administer, with its keys',
        security: bearerSecurity,
        params: ProjectParams,
        response: {
          200: Type.Object({ ...ProjectSchema.properties, keys: Type.Array(ApiKeySchema) }),
          ...errors(401, 404),
        },
      },
    },
    async (request) => {
      const { project_id } = request.params as { project_id: string };
      const project = await requireProjectAdmin(ctx.db, authOf(request).accountId, project_id);
      return { ...presentProject(project, project.role), keys: await listProjectKeys(ctx, project.id) };
    },
  );

  app.get(
    '/projects/:project_id/members',
    {
      config: account,
      schema: {
        tags: ['account API'],
        summary: 'Members of a project and their roles',
        security: bearerSecurity,
        params: ProjectParams,
        response: { 200: list(MemberSchema), ...errors(401, 404) },
      },
    },
    async (request) => {
      const { project_id } = request.params as { project_id: string };
      await requireProjectAdmin(ctx.db, authOf(request).accountId, project_id);
      return { data: await listProjectMembers(ctx, project_id) };
    },
  );

  app.post(
    '/projects/:project_id/members',
    {
      config: account,
      schema: {
        tags: ['account API'],
        summary: 'Give an existing account a role (admin or member) in a project',
        security: bearerSecurity,
        params: ProjectParams,
        body: Type.Object({ email: Type.String(), role: Type.String({ enum: ['admin', 'member'] }) }),
        response: { 200: list(MemberSchema), ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const { project_id } = request.params as { project_id: string };
      return {
        data: await addProjectMember(ctx, authOf(request).accountId, project_id, request.body as never),
      };
    },
  );
}
