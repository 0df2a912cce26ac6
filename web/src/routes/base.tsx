import type { QueryClient } from '@tanstack/react-query';
import {
  createRootRouteWithContext,
  createRoute,
  lazyRouteComponent,
  Outlet,
  redirect,
} from '@tanstack/react-router';
import { sessionQuery } from '../api/endpoints.ts';
import { NotFound } from '../screens/NotFound.tsx';

/** The root of every route, and the signed-in part of the app that every screen's route hangs under. */
/** A non-empty string search parameter, or nothing. */
export const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);

export const rootRoute = createRootRouteWithContext<{ queryClient: QueryClient }>()({
  component: Outlet,
  notFoundComponent: NotFound,
});

/** Every screen behind sign-in: a signed-out visitor goes to the sign-in page, and comes back after. */
export const appRoute = createRoute({
  getParentRoute: () => rootRoute,
  id: 'app',
  beforeLoad: async ({ context, location }) => {
    const session = await context.queryClient.ensureQueryData(sessionQuery);
    if (!session) throw redirect({ to: '/sign-in', search: { next: location.href } });
    return { session };
  },
  component: lazyRouteComponent(() => import('../screens/Shell.tsx')),
});
