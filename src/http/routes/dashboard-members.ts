import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import {
  acceptInvitation,
  describeInvitation,
  inviteMember,
  listInvitations,
  revokeInvitation,
} from '../../domain/accounts/invitations.ts';
import { keysRevokedWithMember } from '../../domain/accounts/member-keys.ts';
import { changeMemberRole, removeMember } from '../../domain/accounts/members.ts';
import { listProjectMembers } from '../../domain/accounts/projects.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { authOf, sessionMetaOf, setSessionCookie } from '../auth.ts';
import { ApiKeySchema, errors, ProjectParams, typed } from '../schemas.ts';
import {
  Email,
  InvitationAcceptance,
  InvitationDetails,
  InvitationSchema,
  MemberList,
  MemberSchema,
  Role,
} from './dashboard-schemas.ts';

const MemberParams = Type.Object({
  ...ProjectParams.properties,
  account_id: Type.String({ description: "the member's account id" }),
});
const RemoveMemberQuery = Type.Object({
  keep_keys: Type.Optional(
    Type.Boolean({
      default: false,
      description:
        'true keeps the project keys the member made in this project working; by default they are revoked with the membership (GET .../members/{account_id}/keys lists them)',
    }),
  ),
});
const InvitationParams = Type.Object({
  ...ProjectParams.properties,
  invitation_id: Type.String({ description: "the invitation's id" }),
});
const TokenParams = Type.Object({
  token: Type.String({ maxLength: 200, description: 'the `token` of the emailed invitation link' }),
});
const InviteRequest = Type.Object({ email: Email, role: Role }, { title: 'InviteMemberRequest' });
const ChangeRoleRequest = Type.Object({ role: Role }, { title: 'ChangeMemberRoleRequest' });
const AcceptInvitationRequest = Type.Object(
  {
    accept_terms: Type.Optional(
      Type.Boolean({
        description:
          "needed when you are not signed in (the account is created): must be true, as the person's own answer",
      }),
    ),
    name: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'your name, for a new account' }),
    ),
  },
  { title: 'AcceptInvitationRequest' },
);

/**
 * Members and invitations of a project. Owners and Admins invite, change roles and remove members
 * (only an Owner touches the Owner role); anyone may leave; the last Owner can do neither (409).
 */
export async function dashboardMemberRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const tags = ['dashboard'];
  const admin = { auth: 'session' as const, role: 'admin' as const };

  app.get(
    '/projects/:project_id/members',
    {
      // every member sees who is on the project; changing it needs Owner or Admin
      config: { auth: 'session' },
      schema: {
        tags,
        summary: 'The members of a project and their roles',
        operationId: 'listTeamMembers',
        params: ProjectParams,
        response: { 200: MemberList, ...errors(401, 403, 404) },
      },
    },
    async (request) => ({ data: await listProjectMembers(ctx, authOf(request), request.params.project_id) }),
  );

  app.patch(
    '/projects/:project_id/members/:account_id',
    {
      config: admin,
      schema: {
        tags,
        summary: "Change a member's role (the last Owner cannot be demoted: 409)",
        operationId: 'changeMemberRole',
        params: MemberParams,
        body: ChangeRoleRequest,
        response: { 200: MemberSchema, ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (request) =>
      changeMemberRole(
        ctx,
        authOf(request),
        request.params.project_id,
        request.params.account_id,
        request.body,
      ),
  );

  app.get(
    '/projects/:project_id/members/:account_id/keys',
    {
      // Owners and Admins ask about anyone; a member about themselves, before leaving (checked inside)
      config: { auth: 'session' },
      schema: {
        tags,
        summary: 'The project keys a member made here that removing them revokes (unless keep_keys)',
        operationId: 'listMemberKeys',
        params: MemberParams,
        response: { 200: Type.Object({ data: Type.Array(ApiKeySchema) }), ...errors(401, 403, 404) },
      },
    },
    async (request) => ({
      data: await keysRevokedWithMember(
        ctx,
        authOf(request),
        request.params.project_id,
        request.params.account_id,
      ),
    }),
  );

  app.delete(
    '/projects/:project_id/members/:account_id',
    {
      // a Member may remove themselves (leave); removing others needs Owner or Admin (checked inside)
      config: { auth: 'session' },
      schema: {
        tags,
        summary:
          'Remove a member, or leave the project with your own account id (the last Owner cannot: 409)',
        operationId: 'removeMember',
        description:
          'The project keys the member made in this project are revoked with the membership (a project key acts for the project whoever made it, so it would outlive their place here), unless `keep_keys=true`. GET .../members/{account_id}/keys lists them first. Their all-access keys stop reaching this project with the membership.',
        params: MemberParams,
        querystring: RemoveMemberQuery,
        response: { 204: Type.Null(), ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      const { project_id, account_id } = request.params;
      await removeMember(ctx, authOf(request), project_id, account_id, {
        keepKeys: request.query.keep_keys === true,
      });
      return reply.code(204).send();
    },
  );

  app.post(
    '/projects/:project_id/invitations',
    {
      config: admin,
      schema: {
        tags,
        summary: 'Invite an address to the project with a role: emails a link valid 7 days',
        operationId: 'inviteMember',
        description:
          'Only an Owner invites an Owner. Inviting the same address again replaces the pending invitation.',
        params: ProjectParams,
        body: InviteRequest,
        response: { 200: InvitationSchema, ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (request) => inviteMember(ctx, authOf(request), request.params.project_id, request.body),
  );

  app.get(
    '/projects/:project_id/invitations',
    {
      config: admin,
      schema: {
        tags,
        summary: 'The pending invitations of a project, newest first (Owners and Admins)',
        operationId: 'listInvitations',
        params: ProjectParams,
        response: { 200: Type.Object({ data: Type.Array(InvitationSchema) }), ...errors(401, 403, 404) },
      },
    },
    async (request) => ({ data: await listInvitations(ctx, authOf(request), request.params.project_id) }),
  );

  app.delete(
    '/projects/:project_id/invitations/:invitation_id',
    {
      config: admin,
      schema: {
        tags,
        summary: 'Withdraw a pending invitation: its link stops working',
        operationId: 'revokeInvitation',
        params: InvitationParams,
        response: { 204: Type.Null(), ...errors(401, 403, 404) },
      },
    },
    async (request, reply) => {
      const { project_id, invitation_id } = request.params;
      await revokeInvitation(ctx, authOf(request), project_id, invitation_id);
      return reply.code(204).send();
    },
  );

  app.get(
    '/invitations/:token',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary:
          'What an invitation link is for: project, role, inviter, status, and whether the address has an account',
        operationId: 'getInvitation',
        params: TokenParams,
        response: { 200: InvitationDetails, ...errors(404) },
      },
    },
    async (request) => describeInvitation(ctx, request.params.token),
  );

  app.post(
    '/invitations/:token/accept',
    {
      config: { auth: 'none', optionalSession: true },
      schema: {
        tags,
        summary:
          'Accept an invitation: signed in, join; not signed in, create the account (accept_terms) and sign in',
        operationId: 'acceptInvitation',
        description:
          'Signed in (cookie with X-CSRF-Token, or bearer): you must be the invited address. Not signed in: the account is created for the invited address and a session is returned and set as the cookie. A used or expired invitation is 400.',
        params: TokenParams,
        body: AcceptInvitationRequest,
        response: { 200: InvitationAcceptance, ...errors(400, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      const session = request.auth?.session ?? null;
      const result = await acceptInvitation(
        ctx,
        request.params.token,
        session,
        request.body ?? {},
        sessionMetaOf(request),
      );
      if (result.session) setSessionCookie(reply, ctx.config.appUrl, result.session.token);
      return result;
    },
  );
}
