import type { FastifyInstance, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import type { Role } from '../db/schema.ts';

/**
 * What every route declares about who may call it, kept as the routes register, so that one door
 * can take another's rule instead of restating it (the Resend door takes the role of each
 * operation's /v1 counterpart: src/http/resend/counterparts.ts), and a test can walk a door's
 * operations from the app itself.
 */
export interface DeclaredRoute {
  method: string;
  /** The full path, prefix included (`/v1/webhooks/:id`). */
  url: string;
  auth: string;
  /** The least role a dashboard session needs, as the auth hook checks it ('member' when none is). */
  role: Role;
  /** The /v1 operations this route stands for (the Resend door's), as `METHOD /v1/path`. */
  counterparts?: string[];
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered so far, with its auth mode and the role the auth hook checks. */
    declaredRoutes(): DeclaredRoute[];
    /** The least role a session needs on `METHOD url` (a registered route), or undefined if none is. */
    declaredRole(method: string, url: string): Role | undefined;
  }
}

/** Path parameters through which a route names the project a session's role is checked in. */
const PROJECT_PARAMS = /\/:(project_id|team_id)(\/|$)/;

/**
 * The role the auth hook (auth.ts) checks for a session here: the declared `config.role` (default
 * member) on a project route, or on an account or session route whose path names the project;
 * elsewhere the route checks no role (the domain code decides, e.g. who may manage a key).
 */
function checkedRole(route: RouteOptions): Role {
  const auth = route.config?.auth ?? 'none';
  const applies =
    auth === 'project' || ((auth === 'account' || auth === 'session') && PROJECT_PARAMS.test(route.url));
  return applies ? (route.config?.role ?? 'member') : 'member';
}

export const routeRolesPlugin = fp(
  async (app: FastifyInstance) => {
    // the route options themselves: a later onRoute hook (a door's) may still set their config
    const routes: RouteOptions[] = [];
    app.addHook('onRoute', (route) => {
      routes.push(route);
    });
    const declared = (): DeclaredRoute[] =>
      routes.flatMap((route) =>
        [route.method].flat().map((method) => ({
          method,
          url: route.url,
          auth: route.config?.auth ?? 'none',
          role: checkedRole(route),
          ...(route.config?.counterparts ? { counterparts: route.config.counterparts } : {}),
        })),
      );
    app.decorate('declaredRoutes', declared);
    app.decorate('declaredRole', (method: string, url: string) => {
      const route = routes.find((r) => r.url === url && [r.method].flat().includes(method));
      return route ? checkedRole(route) : undefined;
    });
  },
  { name: 'posthorn-route-roles' },
);
