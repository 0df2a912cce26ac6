import { createRoute, lazyRouteComponent, redirect } from '@tanstack/react-router';
import { invitationQuery, sessionQuery } from '../api/endpoints.ts';
import { mailboxListQuery, mailboxMessageQuery, mailboxStatusQuery } from '../api/mailbox.ts';
import { type Loadable, localPath, pageNumber, rootRoute, text, tokenSearch } from './base.tsx';

/** The pages a signed-out person sees. */

const signInRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/sign-in',
  validateSearch: (search: Record<string, unknown>): { next?: string } => ({ next: localPath(search.next) }),
  beforeLoad: async ({ context }) => {
    if (await context.queryClient.ensureQueryData(sessionQuery)) throw redirect({ to: '/' });
  },
  component: lazyRouteComponent(() => import('../features/auth/SignIn.tsx')),
});

const signUpRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/sign-up',
  beforeLoad: async ({ context }) => {
    if (await context.queryClient.ensureQueryData(sessionQuery)) throw redirect({ to: '/' });
  },
  component: lazyRouteComponent(() => import('../features/auth/SignUp.tsx')),
});

const forgotRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/forgot',
  component: lazyRouteComponent(() => import('../features/auth/Forgot.tsx')),
});

const resetRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/reset',
  validateSearch: tokenSearch,
  component: lazyRouteComponent(() => import('../features/auth/Reset.tsx')),
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
  component: lazyRouteComponent(() => import('../features/auth/Invite.tsx')),
});

/** The dev mailbox: signed out too, as a person signing up reads the emailed code there. */
const mailboxRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/mailbox',
  validateSearch: (search: Record<string, unknown>): { to?: string; page?: number; id?: string } => ({
    to: text(search.to),
    page: pageNumber(search.page),
    id: text(search.id),
  }),
  loaderDeps: ({ search }) => search,
  loader: ({ context: { queryClient }, deps }) =>
    Promise.all(
      [
        sessionQuery,
        mailboxStatusQuery,
        mailboxListQuery({ to: deps.to, page: deps.page ?? 1 }),
        deps.id && mailboxMessageQuery(deps.id),
      ].map((q) => (q ? queryClient.ensureQueryData(q as Loadable).catch(() => undefined) : undefined)),
    ),
  component: lazyRouteComponent(() => import('../features/mailbox/Mailbox.tsx')),
});

export const publicRoutes = [
  signInRoute,
  signUpRoute,
  forgotRoute,
  resetRoute,
  inviteRoute,
  mailboxRoute,
] as const;
