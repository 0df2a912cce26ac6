import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Role } from '../db/schema.ts';
import { requireMember, requireRole } from '../domain/accounts/membership.ts';
import { selectProject, selectSessionProject } from '../domain/accounts/project-selection.ts';
import {
  type AuthenticatedSession,
  authenticateSession,
  SESSION_DAYS,
  SESSION_PREFIX,
  type SessionMeta,
} from '../domain/accounts/sessions.ts';
import type { DomainContext } from '../domain/core/context.ts';
import { AuthenticationError, ForbiddenError } from '../domain/core/errors.ts';
import type { RateLimiter } from '../domain/keys/rate-limit.ts';
import type { RequestLogWriter } from '../domain/keys/request-log.ts';
import { type AuthenticatedKey, authenticateKey } from '../domain/keys/service.ts';
import { type ProjectFacts, projectFacts } from '../domain/plans/project-facts.ts';
import { sendRateLimitHeaders } from './errors.ts';
import { routeRolesPlugin } from './route-roles.ts';

/**
 * How a route authenticates:
 * - none: open (index, signup, docs)
 * - project: any key or a dashboard session; acts in a project (chosen by `X-Project-Id` when the
 *   caller may act in several)
 * - key: any key or a dashboard session, no project needed
 * - account: all-access keys or a dashboard session (the account API)
 * - session: a dashboard session only ({app_url}/api)
 *
 * A dashboard session is the `posthorn_session` cookie (then every POST, PUT, PATCH and DELETE must
 * carry the session's `X-CSRF-Token`) or its token as `Authorization: Bearer phs_...` (no cookie, so
 * no forgery to fear). A session acts as the person, with the person's role in the project: the route
 * declares the least role it needs in `config.role` (default member). Keys are not affected by roles:
 * a project key acts in its project, an all-access key only where its user is Owner or Admin.
 *
 * 401 is for a missing, malformed, unknown, expired or revoked credential; a valid key where keys of
 * its kind do not reach (a project key on the account API, any key on a session route) is 403, and
 * the message says what the key can do.
 */
export type AuthMode = 'none' | 'project' | 'key' | 'account' | 'session';

export const SESSION_COOKIE = 'posthorn_session';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface RequestAuth {
  key: AuthenticatedKey | null;
  /** The signed-in person's session, when a session (not a key) authenticated the call. */
  session: AuthenticatedSession | null;
  accountId: string;
  projectId: string | null;
  /** The project's facts, loaded with a project key; see projectFactsOf. */
  project: ProjectFacts | null;
  /** A session's role in the project the call is about (null for keys and for calls about no project). */
  role: Role | null;
  mode: AuthMode;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthMode;
    /**
     * The least project role a dashboard session needs here (default `member`): `admin` on what
     * manages keys, domains, webhooks, members and project settings. The project is the one the call
     * acts in (`X-Project-Id`) or the one its path names (`project_id`, `team_id`).
     */
    role?: Role;
    /** On an open route: a session, when one is presented, signs the person in (invitation accept). */
    optionalSession?: boolean;
    /**
     * On a session route: a request with no credential at all (no cookie, no Authorization) passes
     * signed out, with no auth (GET /api/session answers null). A credential presented is checked
     * as usual: a stale session is still 401.
     */
    allowSignedOut?: boolean;
    /**
     * An all-access key that names no project (no `X-Project-Id`) acts in its account's default
     * project instead of being asked to choose (the Resend door: a Resend client sends no such header).
     */
    defaultProject?: boolean;
    /** The /v1 operations a route stands for, whose role it takes (the Resend door's; route-roles.ts). */
    counterparts?: string[];
    /** A route that answers 405 to every caller: it stands for no operation (the Resend door's). */
    unsupported?: boolean;
  }
  interface FastifyRequest {
    auth: RequestAuth | null;
  }
}

/** The authenticated caller; routes with an auth mode other than none always have one. */
export function authOf(request: FastifyRequest): RequestAuth {
  if (!request.auth) throw new AuthenticationError('Authentication required');
  return request.auth;
}

export function projectOf(request: FastifyRequest): string {
  const projectId = authOf(request).projectId;
  if (!projectId) throw new AuthenticationError('This endpoint acts in a project');
  return projectId;
}

/** The dashboard session of a session route. */
export function sessionOf(request: FastifyRequest): AuthenticatedSession {
  const session = request.auth?.session;
  if (!session) throw new AuthenticationError('Sign in to the dashboard first (POST /api/auth/login)');
  return session;
}

/** The facts of the project the call acts in (already loaded for project keys). */
export async function projectFactsOf(request: FastifyRequest, ctx: DomainContext): Promise<ProjectFacts> {
  const auth = authOf(request);
  const projectId = projectOf(request);
  if (auth.project?.id !== projectId) auth.project = await projectFacts(ctx, projectId);
  return auth.project;
}

/** Where a sign-in comes from, for the session list and the per-IP failure count. */
export function sessionMetaOf(request: FastifyRequest): SessionMeta {
  return { ip: request.ip, userAgent: request.headers['user-agent'] ?? null };
}

/** Sets the session cookie after a sign-in: httpOnly, SameSite=Lax, Secure when the app is served over https. */
export function setSessionCookie(reply: FastifyReply, appUrl: string, token: string): void {
  const secure = appUrl.startsWith('https:') ? '; Secure' : '';
  reply.header(
    'set-cookie',
    `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${SESSION_DAYS * 86_400}${secure}`,
  );
}

/** Clears the session cookie (sign out). */
export function clearSessionCookie(reply: FastifyReply, appUrl: string): void {
  const secure = appUrl.startsWith('https:') ? '; Secure' : '';
  reply.header('set-cookie', `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0${secure}`);
}

type Credential = { kind: 'key'; token: string } | { kind: 'session'; token: string; cookie: boolean };

function bearer(request: FastifyRequest): string {
  const header = request.headers.authorization ?? '';
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match)
    throw new AuthenticationError('Malformed Authorization header: expected `Authorization: Bearer ph_...`');
  return match[1];
}

function cookieToken(request: FastifyRequest): string | null {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [name, value] = part.trim().split('=', 2);
    if (name === SESSION_COOKIE && value) return value;
  }
  return null;
}

/** Whether the request presents any credential: an Authorization header or a session cookie. */
function hasCredential(request: FastifyRequest): boolean {
  return request.headers.authorization !== undefined || cookieToken(request) !== null;
}

/** The credential presented: the Authorization header wins over the cookie. */
function credentialOf(request: FastifyRequest): Credential {
  if (request.headers.authorization) {
    const token = bearer(request);
    return token.startsWith(SESSION_PREFIX)
      ? { kind: 'session', token, cookie: false }
      : { kind: 'key', token };
  }
  const token = cookieToken(request);
  if (token) return { kind: 'session', token, cookie: true };
  throw new AuthenticationError('Missing API key: send the header `Authorization: Bearer ph_...`');
}

/** A cookie-signed state change must echo the session's anti-forgery token (compared timing-safe). */
function checkCsrf(request: FastifyRequest, session: AuthenticatedSession): void {
  if (SAFE_METHODS.has(request.method)) return;
  const header = request.headers['x-csrf-token'];
  const sent = Buffer.from((Array.isArray(header) ? header[0] : header) ?? '');
  const expected = Buffer.from(session.csrfToken);
  if (sent.length !== expected.length || !timingSafeEqual(sent, expected)) {
    throw new ForbiddenError(
      'Missing or wrong X-CSRF-Token header: a change signed in by the session cookie must carry the csrf_token from sign-in or GET /api/session',
    );
  }
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The project a path names (`/projects/{project_id}/...`, `/teams/{team_id}/...`). */
function pathProject(request: FastifyRequest): string | undefined {
  const params = (request.params ?? {}) as Record<string, string | undefined>;
  return params.project_id ?? params.team_id;
}

/** A session acting as its person: the project and the role there, then the route's least role. */
async function bySession(
  ctx: DomainContext,
  request: FastifyRequest,
  mode: AuthMode,
  token: string,
  cookie: boolean,
) {
  const session = await authenticateSession(ctx, token);
  if (cookie) checkCsrf(request, session);
  const auth: RequestAuth = {
    key: null,
    session,
    accountId: session.accountId,
    projectId: null,
    project: null,
    role: null,
    mode,
  };
  request.auth = auth;
  if (mode === 'project') {
    const chosen = await selectSessionProject(ctx, session.accountId, header(request, 'x-project-id'));
    auth.projectId = chosen.projectId;
    auth.role = chosen.role;
  } else if (mode === 'account' || mode === 'session') {
    const named = pathProject(request);
    if (named !== undefined) auth.role = await requireMember(ctx.db, session.accountId, named);
  }
  if (auth.role) requireRole(auth.role, request.routeOptions.config?.role ?? 'member');
}

/** An open route that takes a session when there is one; a stale session counts as none. */
async function optionalSession(ctx: DomainContext, request: FastifyRequest) {
  let credential: Credential;
  try {
    credential = credentialOf(request);
  } catch {
    return;
  }
  if (credential.kind !== 'session') return;
  try {
    await bySession(ctx, request, 'none', credential.token, credential.cookie);
  } catch (err) {
    request.auth = null;
    if (!(err instanceof AuthenticationError)) throw err;
  }
}

/** An API key: a project key acts in its project, an all-access key where its user is Owner or Admin. */
async function byKey(ctx: DomainContext, request: FastifyRequest, mode: AuthMode, token: string) {
  const { key, project } = await authenticateKey(ctx, token);
  const auth: RequestAuth = {
    key,
    session: null,
    accountId: key.accountId,
    projectId: null,
    project,
    role: null,
    mode,
  };
  // a valid key on the wrong half of the API is 403 saying what the key can do (401 is for a
  // missing or invalid key); the refused call is still logged, as part of the key's history
  if (mode === 'account' && key.scope !== 'all_access') {
    request.auth = { ...auth, projectId: key.projectId, project: null };
    throw new ForbiddenError(
      `This is a project key: it acts only in its own project (${key.projectId}), through the project API (/v1/emails, /v1/contacts, /v1/domains and the rest); this account-API endpoint (workspaces, projects, members, API keys) needs an all-access key`,
    );
  }
  if (mode === 'session') {
    request.auth = { ...auth, projectId: key.projectId, project: null };
    throw new ForbiddenError(
      `This dashboard endpoint takes a dashboard session (sign in with POST /api/auth/login), not an API key; ${
        key.scope === 'all_access'
          ? 'this all-access key works on /v1: the account API, and the project API in projects where its user is Owner or Admin'
          : `this project key works on the project API (/v1) of its own project (${key.projectId})`
      }`,
    );
  }
  request.auth = auth;
  if (mode === 'project')
    auth.projectId = await selectProject(ctx, key, header(request, 'x-project-id'), {
      orDefault: request.routeOptions.config?.defaultProject === true,
    });
}

export const authPlugin = fp(
  async (
    app: FastifyInstance,
    opts: { ctx: DomainContext; rateLimiter: RateLimiter; requestLog: RequestLogWriter },
  ) => {
    const { ctx, rateLimiter, requestLog } = opts;
    app.decorateRequest('auth', null);
    await app.register(routeRolesPlugin);

    app.addHook('onRequest', async (request, reply) => {
      const mode = request.routeOptions.config?.auth ?? 'none';
      if (mode === 'none') {
        if (request.routeOptions.config?.optionalSession) await optionalSession(ctx, request);
        return;
      }
      if (request.routeOptions.config?.allowSignedOut && !hasCredential(request)) return;
      const credential = credentialOf(request);
      if (credential.kind === 'session') {
        await bySession(ctx, request, mode, credential.token, credential.cookie);
      } else {
        await byKey(ctx, request, mode, credential.token);
      }
      const auth = authOf(request);
      if (rateLimiter.enabled) {
        sendRateLimitHeaders(reply, await rateLimiter.take(auth.projectId ?? auth.accountId));
      }
    });

    app.addHook('onResponse', async (request, reply) => {
      const auth = request.auth;
      if (!auth?.key) return;
      requestLog.add({
        keyId: auth.key.id,
        keyName: auth.key.name,
        projectId: auth.projectId,
        method: request.method,
        path: request.url.split('?')[0],
        status: reply.statusCode,
        latencyMs: reply.elapsedTime,
        at: new Date(),
        account: auth.mode === 'account' && auth.key.scope === 'all_access',
      });
    });
  },
  { name: 'posthorn-auth' },
);
