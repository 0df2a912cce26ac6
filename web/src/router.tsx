import type { QueryClient } from '@tanstack/react-query';
import { createRoute, createRouter, lazyRouteComponent, redirect } from '@tanstack/react-router';
import { EMAIL_STATUSES, type EmailStatus, sessionQuery } from './api/endpoints.ts';
import { appRoute, rootRoute, text } from './routes/base.tsx';
import { campaignRoutes } from './routes/campaigns.tsx';
import { flowRoutes } from './routes/flows.tsx';
import { reportRoutes } from './routes/reports.tsx';
import { templateRoutes } from './routes/templates.tsx';

/** Every route of the app. Screens load on demand: the first page fetches only what it shows. */

/** Only same-app paths may be a destination after sign-in (never another site). */
const localPath = (value: unknown) => {
  const path = text(value);
  return path?.startsWith('/') && !path.startsWith('//') ? path : undefined;
};

const signInRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/sign-in',
  validateSearch: (search: Record<string, unknown>): { next?: string } => ({ next: localPath(search.next) }),
  beforeLoad: async ({ context }) => {
    if (await context.queryClient.ensureQueryData(sessionQuery)) throw redirect({ to: '/' });
  },
  component: lazyRouteComponent(() => import('./screens/SignIn.tsx')),
});

const forgotRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/forgot',
  component: lazyRouteComponent(() => import('./screens/Forgot.tsx')),
});

const tokenSearch = (search: Record<string, unknown>): { token?: string } => ({ token: text(search.token) });

const resetRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/reset',
  validateSearch: tokenSearch,
  component: lazyRouteComponent(() => import('./screens/Reset.tsx')),
});

const inviteRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/invite',
  validateSearch: tokenSearch,
  component: lazyRouteComponent(() => import('./screens/Invite.tsx')),
});

const overviewRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/',
  component: lazyRouteComponent(() => import('./screens/Overview.tsx')),
});

export interface EmailsSearch {
  status?: EmailStatus;
  to?: string;
  page?: number;
}

const emailsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/emails',
  validateSearch: (search: Record<string, unknown>): EmailsSearch => {
    const status = EMAIL_STATUSES.find((s) => s === search.status);
    const page = Number(search.page);
    return {
      status,
      to: text(search.to),
      page: Number.isInteger(page) && page > 1 ? page : undefined,
    };
  },
  component: lazyRouteComponent(() => import('./screens/Emails.tsx')),
});

const emailRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/emails/$emailId',
  component: lazyRouteComponent(() => import('./screens/EmailDetail.tsx')),
});

const keysRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/keys',
  component: lazyRouteComponent(() => import('./screens/Keys.tsx')),
});

// audience and settings: contacts, lists, segments, settings, members, account
export interface ContactsSearch {
  q?: string;
  list?: string;
  segment?: string;
  subscribed?: 'yes' | 'no';
  page?: number;
}

const contactsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/contacts',
  validateSearch: (search: Record<string, unknown>): ContactsSearch => {
    const page = Number(search.page);
    return {
      q: text(search.q),
      list: text(search.list),
      segment: text(search.segment),
      subscribed: search.subscribed === 'yes' || search.subscribed === 'no' ? search.subscribed : undefined,
      page: Number.isInteger(page) && page > 1 ? page : undefined,
    };
  },
  component: lazyRouteComponent(() => import('./screens/Contacts.tsx')),
});

const contactRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/contacts/$contactId',
  component: lazyRouteComponent(() => import('./screens/ContactDetail.tsx')),
});

const listsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/lists',
  component: lazyRouteComponent(() => import('./screens/Lists.tsx')),
});

const segmentsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/segments',
  component: lazyRouteComponent(() => import('./screens/Segments.tsx')),
});

const segmentRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/segments/$segmentId',
  component: lazyRouteComponent(() => import('./screens/SegmentEditor.tsx')),
});

const settingsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/settings',
  component: lazyRouteComponent(() => import('./screens/Settings.tsx')),
});

const membersRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/members',
  component: lazyRouteComponent(() => import('./screens/Members.tsx')),
});

const accountRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/account',
  component: lazyRouteComponent(() => import('./screens/Account.tsx')),
});

// sending: domains, SMTP, webhooks, suppressions, inbound
const domainsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/domains',
  component: lazyRouteComponent(() => import('./screens/Domains.tsx')),
});

const domainRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/domains/$domainId',
  component: lazyRouteComponent(() => import('./screens/DomainDetail.tsx')),
});

const smtpRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/smtp',
  component: lazyRouteComponent(() => import('./screens/Smtp.tsx')),
});

const webhooksRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/webhooks',
  component: lazyRouteComponent(() => import('./screens/Webhooks.tsx')),
});

const webhookRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/webhooks/$webhookId',
  component: lazyRouteComponent(() => import('./screens/WebhookDetail.tsx')),
});

const suppressionsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/suppressions',
  component: lazyRouteComponent(() => import('./screens/Suppressions.tsx')),
});

const inboundRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/inbound',
  component: lazyRouteComponent(() => import('./screens/Inbound.tsx')),
});

const inboundEmailRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/inbound/$inboundId',
  component: lazyRouteComponent(() => import('./screens/InboundDetail.tsx')),
});

const routeTree = rootRoute.addChildren([
  signInRoute,
  forgotRoute,
  resetRoute,
  inviteRoute,
  appRoute.addChildren([
    overviewRoute,
    emailsRoute,
    emailRoute,
    keysRoute,
    contactsRoute,
    contactRoute,
    listsRoute,
    segmentsRoute,
    segmentRoute,
    settingsRoute,
    membersRoute,
    accountRoute,
    domainsRoute,
    domainRoute,
    smtpRoute,
    webhooksRoute,
    webhookRoute,
    suppressionsRoute,
    inboundRoute,
    inboundEmailRoute,
    ...templateRoutes,
    ...campaignRoutes,
    ...flowRoutes,
    ...reportRoutes,
  ]),
]);

/** The path the server serves the app at (its `<base href>`), so one build works under any path. */
function basepath(): string {
  const base = document.querySelector('base')?.getAttribute('href');
  return base ? new URL(base, window.location.origin).pathname : '/';
}

/** Builds the router; the query client travels in its context for the routes' checks. */
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
