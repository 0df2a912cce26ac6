import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { selectProject } from '../domain/accounts/project-selection.ts';
import { authenticateSession } from '../domain/accounts/sessions.ts';
import type { DomainContext } from '../domain/core/context.ts';
import { AuthenticationError } from '../domain/core/errors.ts';
import type { RateLimiter } from '../domain/keys/rate-limit.ts';
import type { RequestLogWriter } from '../domain/keys/request-log.ts';
import { type AuthenticatedKey, authenticateKey } from '../domain/keys/service.ts';
import { type ProjectFacts, projectFacts } from '../domain/plans/project-facts.ts';
import { sendRateLimitHeaders } from './errors.ts';

/**
 * How a route authenticates:
 * - none: open (index, signup, docs)
 * - project: any key; acts in a project (all-access keys select one)
 * - key: any key, no project needed
 * - account: all-access keys only (the account API)
 * - session: a dashboard session token
 */
export type AuthMode = 'none' | 'project' | 'key' | 'account' | 'session';

export interface RequestAuth {
  key: AuthenticatedKey | null;
  accountId: string;
  projectId: string | null;
  /** The project's facts, loaded with a project key; see projectFactsOf. */
  project: ProjectFacts | null;
  mode: AuthMode;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthMode;
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

function bearer(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (!header)
    throw new AuthenticationError('Missing API key: send the header `Authorization: Bearer ph_...`');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match)
    throw new AuthenticationError('Malformed Authorization header: expected `Authorization: Bearer ph_...`');
  return match[1];
}

/** The facts of the project the call acts in (already loaded for project keys). */
export async function projectFactsOf(request: FastifyRequest, ctx: DomainContext): Promise<ProjectFacts> {
  const auth = authOf(request);
  const projectId = projectOf(request);
  if (auth.project?.id !== projectId) auth.project = await projectFacts(ctx, projectId);
  return auth.project;
}

export const authPlugin = fp(
  async (
    app: FastifyInstance,
    opts: { ctx: DomainContext; rateLimiter: RateLimiter; requestLog: RequestLogWriter },
  ) => {
    const { ctx, rateLimiter, requestLog } = opts;
    app.decorateRequest('auth', null);

    app.addHook('onRequest', async (request, reply) => {
      const mode = request.routeOptions.config?.auth ?? 'none';
      if (mode === 'none') return;
      const token = bearer(request);
      if (mode === 'session') {
        const session = await authenticateSession(ctx, token);
        request.auth = { key: null, accountId: session.accountId, projectId: null, project: null, mode };
        return;
      }
      const { key, project } = await authenticateKey(ctx, token);
      if (mode === 'account' && key.scope !== 'all_access') {
        // still logged: a refused call is part of the key's history
        request.auth = { key, accountId: key.accountId, projectId: key.projectId, project: null, mode };
        throw new AuthenticationError(
          'This account-API endpoint needs an all-access key; a project key only reaches its own project',
        );
      }
      request.auth = { key, accountId: key.accountId, projectId: null, project, mode };
      if (mode === 'project') {
        const header = request.headers['x-project-id'];
        request.auth.projectId = await selectProject(ctx, key, Array.isArray(header) ? header[0] : header);
      }
      if (rateLimiter.enabled) {
        sendRateLimitHeaders(reply, await rateLimiter.take(request.auth.projectId ?? key.accountId));
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
