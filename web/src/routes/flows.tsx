import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { appRoute } from './base.tsx';

/** Flows: the list, and one flow (its builder, counts and enrollments; `new` for a new one). */
const flowsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/flows',
  component: lazyRouteComponent(() => import('../screens/Flows.tsx')),
});

const flowRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/flows/$flowId',
  component: lazyRouteComponent(() => import('../screens/FlowDetail.tsx')),
});

export const flowRoutes = [flowsRoute, flowRoute] as const;
