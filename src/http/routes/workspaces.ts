import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import {
  addProjectMember,
  createProject,
  listProjectMembers,
  listProjects,
} from '../../domain/accounts/projects.ts';
import { createWorkspace, listWorkspaces } from '../../domain/accounts/workspaces.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { getProjectWithKeys } from '../../domain/keys/service.ts';
import { authOf } from '../auth.ts';
import {
  ApiKeySchema,
  errors,
  list,
  Nullable,
  ProjectParams,
  ProjectSchema,
  typed,
  Uuid,
  WorkspaceSchema,
} from '../schemas.ts';

const Name = (what: string) =>
  Type.String({ minLength: 1, maxLength: 100, description: `the ${what}'s name, at most 100 characters` });

const MemberSchema = Type.Object(
  {
    account_id: Uuid,
    object: Type.Literal('project_member'),
    email: Type.String(),
    name: Type.String(),
    role: Type.String({ enum: ['owner', 'admin', 'member'] }),
    created_at: Type.String(),
  },
  { title: 'ProjectMember' },
);
const MemberList = Type.Object(list(MemberSchema).properties, { title: 'ProjectMemberList' });
const WorkspaceList = Type.Object(list(WorkspaceSchema).properties, { title: 'WorkspaceList' });
const ProjectList = Type.Object(list(ProjectSchema).properties, { title: 'ProjectList' });

const CreateWorkspaceRequest = Type.Object({ name: Name('workspace') }, { title: 'CreateWorkspaceRequest' });
const CreatedWorkspace = Type.Object(
  { ...WorkspaceSchema.properties, project: ProjectSchema },
  { title: 'WorkspaceWithProject', description: 'A new workspace and its starter project' },
);

const CreateProjectRequest = Type.Object(
  {
    name: Name('project'),
    workspace_id: Type.Optional(
      Nullable(
        Type.String({
          format: 'uuid',
          description: 'a workspace you administer; omit it (or null) when you administer exactly one',
        }),
      ),
    ),
  },
  { title: 'CreateProjectRequest' },
);
const ProjectWithKeys = Type.Object(
  { ...ProjectSchema.properties, keys: Type.Array(ApiKeySchema) },
  { title: 'ProjectWithKeys' },
);

const AddProjectMemberRequest = Type.Object(
  {
    email: Type.String({ maxLength: 254, description: 'the email of an existing account' }),
    role: Type.Enum(['admin', 'member'], {
      type: 'string',
      description: 'the role to give; an existing member gets this role instead of their old one',
    }),
  },
  { title: 'AddProjectMemberRequest' },
);

/** Account API: workspaces, projects and their members (all-access keys). */
export async function workspaceRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const account = { auth: 'account' as const };
  // a project's details with its keys, and its members, need Owner or Admin when a session acts
  const manage = { ...account, role: 'admin' as const };

  app.get(
    '/workspaces',
    {
      config: account,
      schema: {
        tags: ['account API'],
        summary: 'List your workspaces',
        operationId: 'listWorkspaces',
        response: { 200: WorkspaceList, ...errors(401) },
      },
    },
    async (request) => ({ data: await listWorkspaces(ctx, authOf(request)) }),
  );

  app.post(
    '/workspaces',
    {
      config: account,
      schema: {
        tags: ['account API'],
        summary: 'Create a workspace (a billing boundary) with its starter project',
        operationId: 'createWorkspace',
        body: CreateWorkspaceRequest,
        response: { 200: CreatedWorkspace, ...errors(400, 401) },
      },
    },
    async (request) => createWorkspace(ctx, authOf(request), request.body),
  );

  app.get(
    '/projects',
    {
      config: account,
      schema: {
        tags: ['account API'],
        summary: 'List the projects you belong to, with your role',
        operationId: 'listProjects',
        response: { 200: ProjectList, ...errors(401) },
      },
    },
    async (request) => ({ data: await listProjects(ctx, authOf(request)) }),
  );

  app.post(
    '/projects',
    {
      config: account,
      schema: {
        tags: ['account API'],
        summary: 'Create a project in a workspace you administer',
        operationId: 'createProject',
        description: '`workspace_id` may be omitted when you administer exactly one workspace.',
        body: CreateProjectRequest,
        response: { 200: ProjectSchema, ...errors(400, 401, 404) },
      },
    },
    async (request) => createProject(ctx, authOf(request), request.body),
  );

  app.get(
    '/projects/:project_id',
    {
      config: manage,
      schema: {
        tags: ['account API'],
        summary: 'A project you administer, with its keys',
        operationId: 'getProject',
        params: ProjectParams,
        response: { 200: ProjectWithKeys, ...errors(401, 404) },
      },
    },
    async (request) => getProjectWithKeys(ctx, authOf(request), request.params.project_id),
  );

  app.get(
    '/projects/:project_id/members',
    {
      // any member reads the members; adding one needs Owner or Admin
      config: account,
      schema: {
        tags: ['account API'],
        summary: 'Members of a project and their roles',
        operationId: 'listProjectMembers',
        params: ProjectParams,
        response: { 200: MemberList, ...errors(401, 404) },
      },
    },
    async (request) => ({
      data: await listProjectMembers(ctx, authOf(request), request.params.project_id),
    }),
  );

  app.post(
    '/projects/:project_id/members',
    {
      config: manage,
      schema: {
        tags: ['account API'],
        summary: 'Give an existing account a role (admin or member) in a project',
        operationId: 'addProjectMember',
        params: ProjectParams,
        body: AddProjectMemberRequest,
        response: { 200: MemberList, ...errors(400, 401, 404) },
      },
    },
    async (request) => ({
      data: await addProjectMember(ctx, authOf(request), request.params.project_id, request.body),
    }),
  );
}
