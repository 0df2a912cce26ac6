import type { EnsureQueryDataOptions, QueryClient } from '@tanstack/react-query';
import {
  createRootRouteWithContext,
  createRoute,
  lazyRouteComponent,
  Outlet,
  redirect,
} from '@tanstack/react-router';
import { type SessionProject, sessionQuery } from '../api/endpoints.ts';
import { NotFound } from '../features/shell/NotFound.tsx';
import { projectOf } from '../project.tsx';

/** What every route file shares: the search parameters' readers, the loader, and the two parent routes. */

/** A non-empty string search parameter, or nothing. */
export const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);
/** A page number past the first, or nothing (the first page has no `page`). */
export const pageNumber = (value: unknown) => {
  const page = Number(value);
  return Number.isInteger(page) && page > 1 ? page : undefined;
};
/** Only same-app paths may be a destination after sign-in (never another site). */
export const localPath = (value: unknown) => {
  const path = text(value);
  return path?.startsWith('/') && !path.startsWith('//') ? path : undefined;
};
export const tokenSearch = (search: Record<string, unknown>): { token?: string } => ({
  token: text(search.token),
});

/** A query of any shape, as the loaders list them. */
export type Loadable = EnsureQueryDataOptions<any, any, any, any>;

/** Fetches a screen's queries in the project it acts in; a failure is left for the screen to show. */
export async function load(
  context: { queryClient: QueryClient; project?: SessionProject },
  queries: (project: SessionProject) => (Loadable | false)[],
) {
  const { queryClient, project } = context;
  if (!project) return;
  await Promise.all(
    queries(project).map((q) => (q ? queryClient.ensureQueryData(q).catch(() => undefined) : undefined)),
  );
}

export const rootRoute = createRootRouteWithContext<{ queryClient: QueryClient }>()({
  component: Outlet,
  notFoundComponent: NotFound,
});

/** A signed-out visitor goes to the sign-in page, and comes back after. */
export const appRoute = createRoute({
  getParentRoute: () => rootRoute,
  id: 'app',
  beforeLoad: async ({ context, location }) => {
    const session = await context.queryClient.ensureQueryData(sessionQuery);
    if (!session) throw redirect({ to: '/sign-in', search: { next: location.href } });
    return { session, project: projectOf(session) };
  },
  component: lazyRouteComponent(() => import('../features/shell/Shell.tsx')),
});

/**
 * A signed-in screen without search parameters, as most are: its path, the screen's module (loaded
 * on demand) and the queries its loader fetches first, from the project and the path's parameters.
 */
export function screen<const TPath extends string>(
  path: TPath,
  component: Parameters<typeof lazyRouteComponent>[0],
  queries: (project: SessionProject, params: Record<string, string>) => (Loadable | false)[] = () => [],
) {
  return createRoute({
    getParentRoute: () => appRoute,
    path,
    loader: ({ context, params }) => load(context, (p) => queries(p, params as Record<string, string>)),
    component: lazyRouteComponent(component),
  });
}
