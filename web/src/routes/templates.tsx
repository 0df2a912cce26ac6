import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { appRoute } from './base.tsx';

/** Templates: the list, and the editor of one. */
const templatesRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/templates',
  component: lazyRouteComponent(() => import('../screens/Templates.tsx')),
});

const templateRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/templates/$templateId',
  component: lazyRouteComponent(() => import('../screens/TemplateEditor.tsx')),
});

export const templateRoutes = [templatesRoute, templateRoute] as const;
