import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import {
  invitationsQuery,
  membersQuery,
  projectsQuery,
  sendingRateQuery,
  sessionsQuery,
  workspacesQuery,
} from '../api/audience.ts';
import { accountStatusQuery, limitsQuery } from '../api/endpoints.ts';
import { routesReportQuery } from '../api/operator.ts';
import { DEFAULT_STATS_DAYS, emailStatsQuery } from '../api/overview.ts';
import { canManage } from '../project.tsx';
import { appRoute, load, screen } from './base.tsx';

/** The overview and the team's screens: members, settings and the person's account. */

const overviewRoute = screen(
  '/',
  () => import('../features/overview/Overview.tsx'),
  (p) => [limitsQuery(p.id), accountStatusQuery(p.id), emailStatsQuery(p.id, DEFAULT_STATS_DAYS)],
);

const membersRoute = screen(
  '/members',
  () => import('../features/members/Members.tsx'),
  (p) => [membersQuery(p.id), canManage(p) && invitationsQuery(p.id)],
);

const settingsRoute = screen(
  '/settings',
  () => import('../features/settings/Settings.tsx'),
  (p) => [
    limitsQuery(p.id),
    accountStatusQuery(p.id),
    sendingRateQuery(p.id),
    workspacesQuery,
    projectsQuery,
  ],
);

const accountRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/account',
  loader: ({ context }) => load(context, () => [sessionsQuery]),
  component: lazyRouteComponent(() => import('../features/account/Account.tsx')),
});

/** The operator's view of the routes mail leaves by (shown in the menu where the server answers it). */
const routesRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/routes',
  loader: ({ context }) => context.queryClient.ensureQueryData(routesReportQuery).catch(() => undefined),
  component: lazyRouteComponent(() => import('../features/routes/Routes.tsx')),
});

/** The operator's production readiness: the checks of posthorn admin doctor, run when it opens. */
const readinessRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/readiness',
  component: lazyRouteComponent(() => import('../features/readiness/Readiness.tsx')),
});

export const teamRoutes = [
  overviewRoute,
  membersRoute,
  settingsRoute,
  accountRoute,
  routesRoute,
  readinessRoute,
] as const;
