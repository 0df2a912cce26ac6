import type { FastifyInstance, FastifyTypeProvider } from 'fastify';
import { type Static, type TSchema, Type } from 'typebox';

/**
 * TypeBox's types for what a request carries (body, params, querystring, headers): the validator half
 * of @fastify/type-provider-typebox's TypeBoxTypeProvider. Replies are left
 * to the response schemas, which shape and strip them at run time: the domain returns rows with Dates
 * that the serializer writes as strings.
 */
export interface RequestTypeProvider extends FastifyTypeProvider {
  validator: this['schema'] extends TSchema ? Static<this['schema']> : unknown;
  serializer: unknown;
}

/** A route plugin's instance with typed requests: `request.body`, `params` and `query` follow the schemas. */
export const typed = (app: FastifyInstance) => app.withTypeProvider<RequestTypeProvider>();

/** Schemas shared by several routes; each route file declares its own bodies. */
export const ErrorBody = Type.Object(
  { error: Type.String({ description: 'what went wrong, naming the field and the rule' }) },
  { title: 'Error', description: 'Every error response' },
);
export const PlanErrorBody = Type.Object(
  {
    error: Type.String(),
    code: Type.String(),
    feature: Type.String(),
    upgrade_to: Type.Union([Type.String(), Type.Null()]),
  },
  {
    title: 'PlanError',
    description: 'A 402: the plan does not allow this; `upgrade_to` names a plan that does',
  },
);

export const RateLimitErrorBody = Type.Object(
  {
    error: Type.String({ description: 'what limit was reached, and when to try again' }),
    code: Type.String({
      enum: ['rate_limited', 'daily_limit'],
      description:
        "`rate_limited`: too many requests (or sign-in attempts) for now, retry after `Retry-After` seconds; `daily_limit`: the shared domain's daily sending cap for the project, reset at midnight UTC (send from a verified domain of your own to go past it)",
    }),
  },
  {
    title: 'RateLimitError',
    description: 'A 429: `code` says which limit, the `Retry-After` header when to try again',
  },
);

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
export const Timestamp = Type.String({ format: 'date-time' });
export const Uuid = Type.String({ format: 'uuid' });

export const PageQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 100, default: 25, description: 'page size, 1 to 100' }),
  ),
  offset: Type.Optional(
    Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0, description: 'items to skip' }),
  ),
});

/** The page a list request asks for, with the defaults the schema documents filled in. */
export function pageOf<Q extends { limit?: number; offset?: number }>(query: Q) {
  return { ...query, limit: query.limit ?? 25, offset: query.offset ?? 0 };
}

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
  Object.fromEntries(
    statuses.map((s) => [s, s === 402 ? PlanErrorBody : s === 429 ? RateLimitErrorBody : ErrorBody]),
  );

export const ProjectSchema = Type.Object(
  {
    id: Uuid,
    object: Type.Literal('project'),
    name: Type.String(),
    workspace_id: Uuid,
    created_at: Timestamp,
    role: Type.Optional(Type.String({ enum: ['owner', 'admin', 'member'] })),
  },
  { title: 'Project' },
);

export const WorkspaceSchema = Type.Object(
  {
    id: Uuid,
    object: Type.Literal('workspace'),
    name: Type.String(),
    plan: Type.String(),
    created_at: Timestamp,
    role: Type.Optional(Type.String()),
  },
  { title: 'Workspace' },
);

export const ApiKeySchema = Type.Object(
  {
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
    created_by: Nullable(
      Type.String({
        format: 'uuid',
        description:
          'the account that made the key; removing that account from the project revokes its project keys there (unless the remover keeps them); null once the account is deleted',
      }),
    ),
    key: Type.Optional(
      Type.String({ description: 'the full secret key, present only at creation and rotation' }),
    ),
  },
  { title: 'ApiKey' },
);

export const AccountSchema = Type.Object(
  {
    id: Uuid,
    object: Type.Literal('account'),
    email: Type.String(),
    name: Type.String(),
    email_confirmed: Type.Boolean(),
    created_at: Timestamp,
  },
  { title: 'Account' },
);

export const ProjectParams = Type.Object({ project_id: Type.String({ description: 'project id' }) });
export const IdParams = Type.Object({ id: Type.String() });

/**
 * A sending rate for marketing and automation mail (project, campaign or sending domain): at most
 * `per_second` and `per_hour` messages, spaced by the stricter of the two; null for no limit.
 */
export const SendingRate = Type.Object(
  {
    per_second: Type.Optional(
      Nullable(
        Type.Integer({ minimum: 1, maximum: 100_000, description: 'messages per second; null: no limit' }),
      ),
    ),
    per_hour: Type.Optional(
      Nullable(
        Type.Integer({ minimum: 1, maximum: 360_000_000, description: 'messages per hour; null: no limit' }),
      ),
    ),
  },
  {
    title: 'SendingRate',
    description:
      'a rate for marketing and automation mail, shared by every worker; transactional mail is never throttled',
  },
);
