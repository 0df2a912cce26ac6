import { Type } from 'typebox';
import { AccountSchema, list, Nullable, ProjectSchema, Timestamp, Uuid } from '../schemas.ts';

/** Schemas of the dashboard's own API ({app_url}/api), shared by its route files. */

export const Email = Type.String({ maxLength: 254, description: 'the account email' });

export const Password = Type.String({
  minLength: 10,
  maxLength: 200,
  description: 'at least 10 and at most 200 characters',
});

export const Role = Type.Enum(['owner', 'admin', 'member'], {
  type: 'string',
  description:
    '`owner`, `admin` or `member` (Members read and send; they cannot manage keys, domains, webhooks, members or settings)',
});

export const DashboardSession = Type.Object(
  {
    object: Type.Literal('session'),
    id: Uuid,
    token: Type.String({
      description:
        'the session token (`phs_...`), also set as the httpOnly `posthorn_session` cookie; send it as `Authorization: Bearer` from scripts',
    }),
    account_id: Uuid,
    csrf_token: Type.String({
      description: 'send it as `X-CSRF-Token` on every POST, PUT, PATCH and DELETE signed in by the cookie',
    }),
    expires_at: Timestamp,
  },
  { title: 'DashboardSession' },
);

export const AccountWithPassword = Type.Object(
  {
    ...AccountSchema.properties,
    has_password: Type.Boolean({
      description: 'whether a password is set (sign-in by emailed code works always)',
    }),
  },
  { title: 'DashboardAccount' },
);

export const CurrentSession = Type.Object(
  {
    object: Type.Literal('session'),
    id: Uuid,
    expires_at: Timestamp,
    csrf_token: Type.String({ description: 'the `X-CSRF-Token` for changes signed in by the cookie' }),
    account: AccountWithPassword,
    projects: Type.Array(ProjectSchema, { description: 'every project you belong to, with your `role`' }),
    operator: Type.Boolean({
      description:
        "whether you are this server's operator: the first account created on it (the person who set it up), to whom the dashboard shows the server's own screens (Routes)",
    }),
  },
  { title: 'CurrentSession' },
);

const SessionListItem = Type.Object(
  {
    id: Uuid,
    object: Type.Literal('session'),
    current: Type.Boolean({ description: 'true for the session making this request' }),
    ip: Nullable(Type.String()),
    user_agent: Nullable(Type.String()),
    created_at: Timestamp,
    last_used_at: Timestamp,
    expires_at: Timestamp,
  },
  { title: 'SessionListItem' },
);
export const SessionList = Type.Object(list(SessionListItem).properties, { title: 'SessionList' });

// the same shapes as the account API's members (GET /v1/projects/{project_id}/members)
export const MemberSchema = Type.Object(
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
export const MemberList = Type.Object(list(MemberSchema).properties, { title: 'ProjectMemberList' });

export const InvitationSchema = Type.Object(
  {
    id: Uuid,
    object: Type.Literal('invitation'),
    project_id: Uuid,
    email: Type.String(),
    role: Type.String({ enum: ['owner', 'admin', 'member'] }),
    status: Type.String({ enum: ['pending', 'accepted', 'expired'] }),
    expires_at: Timestamp,
    created_at: Timestamp,
  },
  { title: 'Invitation' },
);

export const InvitationDetails = Type.Object(
  {
    ...InvitationSchema.properties,
    project: Type.Object({ id: Uuid, name: Type.String() }),
    invited_by: Nullable(Type.Object({ name: Type.String(), email: Type.String() })),
    account_exists: Type.Boolean({
      description:
        'whether the invited address has an account (sign in to accept) or not (accept creates it)',
    }),
  },
  { title: 'InvitationDetails' },
);

export const InvitationAcceptance = Type.Object(
  {
    object: Type.Literal('invitation_acceptance'),
    account: AccountSchema,
    project: ProjectSchema,
    session: Type.Union([DashboardSession, Type.Null()], {
      description: 'the new session when the acceptance created the account (also set as the cookie)',
    }),
  },
  { title: 'InvitationAcceptance' },
);
