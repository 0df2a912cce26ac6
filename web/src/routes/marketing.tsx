import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { listsQuery } from '../api/audience.ts';
import { campaignQuery, campaignsQuery } from '../api/campaigns.ts';
import { enrollmentsQuery, FIRST_ENROLLMENTS, flowQuery, flowsQuery } from '../api/flows.ts';
import { type RevenueGroup, revenueQuery } from '../api/overview.ts';
import { startersQuery, templateQuery, templatesQuery, versionsQuery } from '../api/templates.ts';
import { appRoute, load, screen } from './base.tsx';

/** The marketing screens: templates, campaigns, flows and reports. */

const REVENUE_GROUPS: RevenueGroup[] = ['day', 'event', 'campaign', 'flow'];

const templatesRoute = screen(
  '/templates',
  () => import('../features/templates/Templates.tsx'),
  (p) => [templatesQuery(p.id), startersQuery(p.id)],
);

const templateRoute = screen(
  '/templates/$templateId',
  () => import('../features/templates/TemplateEditor.tsx'),
  (p, params) => [templateQuery(p.id, params.templateId), versionsQuery(p.id, params.templateId)],
);

const campaignsRoute = screen(
  '/campaigns',
  () => import('../features/campaigns/Campaigns.tsx'),
  (p) => [campaignsQuery(p.id, 1)],
);

/** One campaign: its builder while a draft, its progress and results after. */
const campaignRoute = screen(
  '/campaigns/$campaignId',
  () => import('../features/campaigns/CampaignDetail.tsx'),
  (p, params) => [campaignQuery(p.id, params.campaignId)],
);

const flowsRoute = screen(
  '/flows',
  () => import('../features/flows/Flows.tsx'),
  (p) => [flowsQuery(p.id, 1)],
);

/** One flow: its builder, counts and enrollments; `new` for a new one. */
const flowRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/flows/$flowId',
  loader: ({ context, params: { flowId } }) =>
    load(context, (p) => [
      flowId !== 'new' && flowQuery(p.id, flowId),
      flowId !== 'new' && enrollmentsQuery(p.id, flowId, FIRST_ENROLLMENTS),
      listsQuery(p.id),
    ]),
  component: lazyRouteComponent(() => import('../features/flows/FlowDetail.tsx')),
});

/** Revenue by day, event, campaign or flow (`?by=`). */
const reportsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/reports',
  validateSearch: (search: Record<string, unknown>): { by?: RevenueGroup } => ({
    by: REVENUE_GROUPS.find((g) => g === search.by),
  }),
  loaderDeps: ({ search }) => search,
  loader: ({ context, deps }) => load(context, (p) => [revenueQuery(p.id, deps.by ?? 'day')]),
  component: lazyRouteComponent(() => import('../features/reports/Reports.tsx')),
});

export const marketingRoutes = [
  templatesRoute,
  templateRoute,
  campaignsRoute,
  campaignRoute,
  flowsRoute,
  flowRoute,
  reportsRoute,
] as const;
