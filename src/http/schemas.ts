import { type TSchema, Type } from 'typebox';

/** Schemas shared by several routes; each route file declares its own bodies. */
export const ErrorBody = Type.Object(
  { error: Type.String() },
  { $id: 'Error', description: 'Every error response' },
);
export const PlanErrorBody = Type.Object({
  error: Type.String(),
  code: Type.String(),
  feature: Type.String(),
  upgrade_to: Type.Union([Type.String(), Type.Null()]),
});

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
export const Timestamp = Type.String({ format: 'date-time' });
export const Uuid = Type.String({ format: 'uuid' });

export const PageQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 25, description: 'page size, 1 to 100' }),
  offset: Type.Integer({ minimum: 0, default: 0, description: 'items to skip' }),
});

export const page = <T extends TSchema>(item: T) =>
  Type.Object({
    data: Type.Array(item),
    total: Type.Integer(),
    limit: Type.Integer(),
    offset: Type.Integer(),
  });
export const list = <T extends TSchema>(item: T) => Type.Object({ data: Type.Array(item) });

/** Error responses to document per route, by status. */
export const errors = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [s, s === 402 ? PlanErrorBody : ErrorBody]));

export const ProjectSchema = Type.Object({
  id: Uuid,
  object: Type.Literal('project'),
  name: Type.String(),
  workspace_id: Uuid,
  created_at: Timestamp,
  role: Type.Optional(Type.String({ enum: ['owner', 'admin', 'member'] })),
});

export const WorkspaceSchema = Type.Object({
  id: Uuid,
  object: Type.Literal('workspace'),
  name: Type.String(),
  plan: Type.String(),
  created_at: Timestamp,
  role: Type.Optional(Type.String()),
});

export const ApiKeySchema = Type.Object({
  id: Uuid,
  object: Type.Literal('api_key'),
  name: Type.String(),
  scope: Type.String({ enum: ['project', 'all_access'] }),
  project_id: Nullable(Uuid),
  token_prefix: Type.String({ description: 'the public start of the key, to recognise it' }),
  status: Type.String({ enum: ['active', 'expired', 'revoked'] }),
  created_at: Timestamp,
  last_used_at: Nullable(Timestamp),
  expires_at: Nullable(Timestamp),
  rotated_at: Nullable(Timestamp),
  key: Type.Optional(
    Type.String({ description: 'the full secret key, present only at creation and rotation' }),
  ),
});

export const AccountSchema = Type.Object({
  id: Uuid,
  object: Type.Literal('account'),
  email: Type.String(),
  name: Type.String(),
  email_confirmed: Type.Boolean(),
  created_at: Timestamp,
});

export const ProjectParams = Type.Object({ project_id: Type.String({ description: 'project id' }) });
export const IdParams = Type.Object({ id: Type.String() });

export const bearerSecurity = [{ bearerAuth: [] }];
