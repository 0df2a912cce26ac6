import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { appRoute } from './base.tsx';

/** Campaigns: the list, and one campaign (its builder while a draft, its progress and results after). */
const campaignsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/campaigns',
  component: lazyRouteComponent(() => import('../screens/Campaigns.tsx')),
});

const campaignRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/campaigns/$campaignId',
  component: lazyRouteComponent(() => import('../screens/CampaignDetail.tsx')),
});

export const campaignRoutes = [campaignsRoute, campaignRoute] as const;
