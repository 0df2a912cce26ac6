import type { QueryClient } from '@tanstack/react-query';
import { createRouter } from '@tanstack/react-router';
import { audienceRoutes } from './routes/audience.tsx';
import { appRoute, rootRoute } from './routes/base.tsx';
import { marketingRoutes } from './routes/marketing.tsx';
import { publicRoutes } from './routes/public.tsx';
import { sendingRoutes } from './routes/sending.tsx';
import { teamRoutes } from './routes/team.tsx';

/**
 * Every route of the app, defined one way in routes/ (one file per area of the menu) and put
 * together here. A screen's code loads on demand (the first page fetches only what it shows), and
 * its route's loader fetches the screen's data meanwhile (ensureQueryData), so a screen renders
 * with what it shows; a failed load is the screen's own to show, as before.
 */

const routeTree = rootRoute.addChildren([
  ...publicRoutes,
  appRoute.addChildren([...teamRoutes, ...sendingRoutes, ...audienceRoutes, ...marketingRoutes]),
]);

/** The path the server serves the app at (its `<base href>`), so one build works under any path. */
function basepath(): string {
  const base = document.querySelector('base')?.getAttribute('href');
  return base ? new URL(base, window.location.origin).pathname : '/';
}

/** Builds the router; the query client travels in its context for the routes' checks and loaders. */
export function buildRouter(queryClient: QueryClient) {
  return createRouter({
    routeTree,
    basepath: basepath(),
    context: { queryClient },
    defaultPreload: 'intent',
    defaultPendingMinMs: 0,
  });
}

declare module '@tanstack/react-router' {
  interface Register {
    router: ReturnType<typeof buildRouter>;
  }
}
