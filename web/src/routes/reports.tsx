import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { appRoute } from './base.tsx';

export type RevenueGroup = 'day' | 'event' | 'campaign' | 'flow';
const GROUPS: RevenueGroup[] = ['day', 'event', 'campaign', 'flow'];

/** Reports: revenue by day, event, campaign or flow (`?by=`). */
const reportsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/reports',
  validateSearch: (search: Record<string, unknown>): { by?: RevenueGroup } => ({
    by: GROUPS.includes(search.by as RevenueGroup) ? (search.by as RevenueGroup) : undefined,
  }),
  component: lazyRouteComponent(() => import('../screens/Reports.tsx')),
});

export const reportRoutes = [reportsRoute] as const;
