import type { EnsureQueryDataOptions, QueryClient } from '@tanstack/react-query';
import {
  createRootRouteWithContext,
  createRoute,
  createRouter,
  lazyRouteComponent,
  Outlet,
  redirect,
} from '@tanstack/react-router';
import {
  contactEventsQuery,
  contactQuery,
  contactsQuery,
  invitationsQuery,
  listsQuery,
  membersQuery,
  projectsQuery,
  segmentQuery,
  segmentsQuery,
  sendingRateQuery,
  sessionsQuery,
  workspacesQuery,
} from './api/audience.ts';
import { campaignQuery, campaignsQuery } from './api/campaigns.ts';
import {
  accountStatusQuery,
  EMAIL_STATUSES,
  type EmailStatus,
  emailQuery,
  emailsQuery,
  invitationQuery,
  keysQuery,
  limitsQuery,
  type SessionProject,
  sessionQuery,
} from './api/endpoints.ts';
import { enrollmentsQuery, FIRST_ENROLLMENTS, flowQuery, flowsQuery } from './api/flows.ts';
import { DEFAULT_STATS_DAYS, emailStatsQuery, type RevenueGroup, revenueQuery } from './api/overview.ts';
import {
  deliveriesQuery,
  domainQuery,
  domainsQuery,
  inboundListQuery,
  inboundQuery,
  suppressionsQuery,
  webhookQuery,
  webhooksQuery,
} from './api/sending.ts';
import { startersQuery, templateQuery, templatesQuery, versionsQuery } from './api/templates.ts';
import { NotFound } from './features/shell/NotFound.tsx';
import { canManage, projectOf } from './project.tsx';

/**
 * Every route of the app, in one place. A screen's code loads on demand (the first page fetches
 * only what it shows), and its route's loader fetches the screen's data meanwhile (ensureQueryData),
 * so a screen renders with what it shows; a failed load is the screen's own to show, as before.
 */

/** A non-empty string search parameter, or nothing. */
const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);
/** A page number past the first, or nothing (the first page has no `page`). */
const pageNumber = (value: unknown) => {
  const page = Number(value);
  return Number.isInteger(page) && page > 1 ? page : undefined;
};
/** Only same-app paths may be a destination after sign-in (never another site). */
const localPath = (value: unknown) => {
  const path = text(value);
  return path?.startsWith('/') && !path.startsWith('//') ? path : undefined;
};
const tokenSearch = (search: Record<string, unknown>): { token?: string } => ({ token: text(search.token) });

/** A query of any shape, as the loaders list them. */
type Loadable = EnsureQueryDataOptions<any, any, any, any>;

/** Fetches a screen's queries in the project it acts in; a failure is left for the screen to show. */
async function load(
  context: { queryClient: QueryClient; project?: SessionProject },
  queries: (project: SessionProject) => (Loadable | false)[],
) {
  const { queryClient, project } = context;
  if (!project) return;
  await Promise.all(
    queries(project).map((q) => (q ? queryClient.ensureQueryData(q).catch(() => undefined) : undefined)),
  );
}

const rootRoute = createRootRouteWithContext<{ queryClient: QueryClient }>()({
  component: Outlet,
  notFoundComponent: NotFound,
});

// ---- the pages a signed-out person sees

const signInRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/sign-in',
  validateSearch: (search: Record<string, unknown>): { next?: string } => ({ next: localPath(search.next) }),
  beforeLoad: async ({ context }) => {
    if (await context.queryClient.ensureQueryData(sessionQuery)) throw redirect({ to: '/' });
  },
  component: lazyRouteComponent(() => import('./features/auth/SignIn.tsx')),
});

const forgotRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/forgot',
  component: lazyRouteComponent(() => import('./features/auth/Forgot.tsx')),
});

const resetRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/reset',
  validateSearch: tokenSearch,
  component: lazyRouteComponent(() => import('./features/auth/Reset.tsx')),
});

const inviteRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/invite',
  validateSearch: tokenSearch,
  loaderDeps: ({ search }) => search,
  loader: async ({ context: { queryClient }, deps: { token } }) => {
    await Promise.all([
      queryClient.ensureQueryData(sessionQuery),
      token && queryClient.ensureQueryData(invitationQuery(token)),
    ]).catch(() => undefined);
  },
  component: lazyRouteComponent(() => import('./features/auth/Invite.tsx')),
});

// ---- every screen behind sign-in, in the project the person acts in

/** A signed-out visitor goes to the sign-in page, and comes back after. */
const appRoute = createRoute({
  getParentRoute: () => rootRoute,
  id: 'app',
  beforeLoad: async ({ context, location }) => {
    const session = await context.queryClient.ensureQueryData(sessionQuery);
    if (!session) throw redirect({ to: '/sign-in', search: { next: location.href } });
    return { session, project: projectOf(session) };
  },
  component: lazyRouteComponent(() => import('./features/shell/Shell.tsx')),
});

const overviewRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/',
  loader: ({ context }) =>
    load(context, (p) => [
      limitsQuery(p.id),
      accountStatusQuery(p.id),
      emailStatsQuery(p.id, DEFAULT_STATS_DAYS),
    ]),
  component: lazyRouteComponent(() => import('./features/overview/Overview.tsx')),
});

// sending: emails, keys, domains, SMTP, webhooks, suppressions, inbound

const emailsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/emails',
  validateSearch: (
    search: Record<string, unknown>,
  ): { status?: EmailStatus; to?: string; page?: number } => ({
    status: EMAIL_STATUSES.find((s) => s === search.status),
    to: text(search.to),
    page: pageNumber(search.page),
  }),
  loaderDeps: ({ search }) => search,
  loader: ({ context, deps }) =>
    load(context, (p) => [emailsQuery(p.id, { status: deps.status, to: deps.to, page: deps.page ?? 1 })]),
  component: lazyRouteComponent(() => import('./features/emails/Emails.tsx')),
});

const emailRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/emails/$emailId',
  loader: ({ context, params }) => load(context, (p) => [emailQuery(p.id, params.emailId)]),
  component: lazyRouteComponent(() => import('./features/emails/EmailDetail.tsx')),
});

const keysRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/keys',
  loader: ({ context }) => load(context, (p) => [canManage(p) && keysQuery(p.id)]),
  component: lazyRouteComponent(() => import('./features/keys/Keys.tsx')),
});

const domainsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/domains',
  loader: ({ context }) => load(context, (p) => [domainsQuery(p.id)]),
  component: lazyRouteComponent(() => import('./features/domains/Domains.tsx')),
});

const domainRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/domains/$domainId',
  loader: ({ context, params }) => load(context, (p) => [domainQuery(p.id, params.domainId)]),
  component: lazyRouteComponent(() => import('./features/domains/DomainDetail.tsx')),
});

const smtpRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/smtp',
  loader: ({ context }) => load(context, (p) => [accountStatusQuery(p.id)]),
  component: lazyRouteComponent(() => import('./features/smtp/Smtp.tsx')),
});

const webhooksRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/webhooks',
  loader: ({ context }) => load(context, (p) => [webhooksQuery(p.id)]),
  component: lazyRouteComponent(() => import('./features/webhooks/Webhooks.tsx')),
});

const webhookRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/webhooks/$webhookId',
  loader: ({ context, params }) =>
    load(context, (p) => [webhookQuery(p.id, params.webhookId), deliveriesQuery(p.id, params.webhookId, 1)]),
  component: lazyRouteComponent(() => import('./features/webhooks/WebhookDetail.tsx')),
});

const suppressionsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/suppressions',
  loader: ({ context }) => load(context, (p) => [suppressionsQuery(p.id, { page: 1 })]),
  component: lazyRouteComponent(() => import('./features/suppressions/Suppressions.tsx')),
});

const inboundRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/inbound',
  loader: ({ context }) =>
    load(context, (p) => [accountStatusQuery(p.id), inboundListQuery(p.id, { page: 1 })]),
  component: lazyRouteComponent(() => import('./features/inbound/Inbound.tsx')),
});

const inboundEmailRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/inbound/$inboundId',
  loader: ({ context, params }) => load(context, (p) => [inboundQuery(p.id, params.inboundId)]),
  component: lazyRouteComponent(() => import('./features/inbound/InboundDetail.tsx')),
});

// audience: contacts, lists, segments

const contactsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/contacts',
  validateSearch: (
    search: Record<string, unknown>,
  ): { q?: string; list?: string; segment?: string; subscribed?: 'yes' | 'no'; page?: number } => ({
    q: text(search.q),
    list: text(search.list),
    segment: text(search.segment),
    subscribed: search.subscribed === 'yes' || search.subscribed === 'no' ? search.subscribed : undefined,
    page: pageNumber(search.page),
  }),
  loaderDeps: ({ search }) => search,
  loader: ({ context, deps }) =>
    load(context, (p) => [
      contactsQuery(p.id, {
        search: deps.q,
        list: deps.list,
        segment: deps.segment,
        subscribed: deps.subscribed === undefined ? undefined : deps.subscribed === 'yes',
        page: deps.page ?? 1,
      }),
      listsQuery(p.id),
      segmentsQuery(p.id),
    ]),
  component: lazyRouteComponent(() => import('./features/contacts/Contacts.tsx')),
});

const contactRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/contacts/$contactId',
  loader: ({ context, params }) =>
    load(context, (p) => [
      contactQuery(p.id, params.contactId),
      contactEventsQuery(p.id, params.contactId),
      listsQuery(p.id),
    ]),
  component: lazyRouteComponent(() => import('./features/contacts/ContactDetail.tsx')),
});

const listsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/lists',
  loader: ({ context }) => load(context, (p) => [listsQuery(p.id)]),
  component: lazyRouteComponent(() => import('./features/lists/Lists.tsx')),
});

const segmentsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/segments',
  loader: ({ context }) => load(context, (p) => [segmentsQuery(p.id)]),
  component: lazyRouteComponent(() => import('./features/segments/Segments.tsx')),
});

const segmentRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/segments/$segmentId',
  loader: ({ context, params: { segmentId } }) =>
    load(context, (p) => [segmentId !== 'new' && segmentQuery(p.id, segmentId), listsQuery(p.id)]),
  component: lazyRouteComponent(() => import('./features/segments/SegmentEditor.tsx')),
});

// marketing: templates, campaigns, flows, reports

const templatesRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/templates',
  loader: ({ context }) => load(context, (p) => [templatesQuery(p.id), startersQuery(p.id)]),
  component: lazyRouteComponent(() => import('./features/templates/Templates.tsx')),
});

const templateRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/templates/$templateId',
  loader: ({ context, params }) =>
    load(context, (p) => [templateQuery(p.id, params.templateId), versionsQuery(p.id, params.templateId)]),
  component: lazyRouteComponent(() => import('./features/templates/TemplateEditor.tsx')),
});

const campaignsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/campaigns',
  loader: ({ context }) => load(context, (p) => [campaignsQuery(p.id, 1)]),
  component: lazyRouteComponent(() => import('./features/campaigns/Campaigns.tsx')),
});

/** One campaign: its builder while a draft, its progress and results after. */
const campaignRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/campaigns/$campaignId',
  loader: ({ context, params }) => load(context, (p) => [campaignQuery(p.id, params.campaignId)]),
  component: lazyRouteComponent(() => import('./features/campaigns/CampaignDetail.tsx')),
});

const flowsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/flows',
  loader: ({ context }) => load(context, (p) => [flowsQuery(p.id, 1)]),
  component: lazyRouteComponent(() => import('./features/flows/Flows.tsx')),
});

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
  component: lazyRouteComponent(() => import('./features/flows/FlowDetail.tsx')),
});

const REVENUE_GROUPS: RevenueGroup[] = ['day', 'event', 'campaign', 'flow'];

/** Revenue by day, event, campaign or flow (`?by=`). */
const reportsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/reports',
  validateSearch: (search: Record<string, unknown>): { by?: RevenueGroup } => ({
    by: REVENUE_GROUPS.find((g) => g === search.by),
  }),
  loaderDeps: ({ search }) => search,
  loader: ({ context, deps }) => load(context, (p) => [revenueQuery(p.id, deps.by ?? 'day')]),
  component: lazyRouteComponent(() => import('./features/reports/Reports.tsx')),
});

// the project and the person: members, settings, account

const membersRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/members',
  loader: ({ context }) => load(context, (p) => [membersQuery(p.id), canManage(p) && invitationsQuery(p.id)]),
  component: lazyRouteComponent(() => import('./features/members/Members.tsx')),
});

const settingsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/settings',
  loader: ({ context }) =>
    load(context, (p) => [
      limitsQuery(p.id),
      accountStatusQuery(p.id),
      sendingRateQuery(p.id),
      workspacesQuery,
      projectsQuery,
    ]),
  component: lazyRouteComponent(() => import('./features/settings/Settings.tsx')),
});

const accountRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/account',
  loader: ({ context }) => load(context, () => [sessionsQuery]),
  component: lazyRouteComponent(() => import('./features/account/Account.tsx')),
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
    domainsRoute,
    domainRoute,
    smtpRoute,
    webhooksRoute,
    webhookRoute,
    suppressionsRoute,
    inboundRoute,
    inboundEmailRoute,
    contactsRoute,
    contactRoute,
    listsRoute,
    segmentsRoute,
    segmentRoute,
    templatesRoute,
    templateRoute,
    campaignsRoute,
    campaignRoute,
    flowsRoute,
    flowRoute,
    reportsRoute,
    membersRoute,
    settingsRoute,
    accountRoute,
  ]),
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
