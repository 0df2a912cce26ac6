import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import {
  accountStatusQuery,
  EMAIL_STATUSES,
  type EmailStatus,
  emailQuery,
  emailsQuery,
  keysQuery,
} from '../api/endpoints.ts';
import {
  deliveriesQuery,
  domainDmarcQuery,
  domainQuery,
  domainsQuery,
  inboundListQuery,
  inboundQuery,
  suppressionsQuery,
  webhookQuery,
  webhooksQuery,
} from '../api/sending.ts';
import { canManage } from '../project.tsx';
import { appRoute, load, pageNumber, screen, text } from './base.tsx';

/** The sending screens: emails, keys, domains, SMTP, webhooks, suppressions and inbound mail. */

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
  component: lazyRouteComponent(() => import('../features/emails/Emails.tsx')),
});

const emailRoute = screen(
  '/emails/$emailId',
  () => import('../features/emails/EmailDetail.tsx'),
  (p, params) => [emailQuery(p.id, params.emailId)],
);

const keysRoute = screen(
  '/keys',
  () => import('../features/keys/Keys.tsx'),
  (p) => [canManage(p) && keysQuery(p.id)],
);

const domainsRoute = screen(
  '/domains',
  () => import('../features/domains/Domains.tsx'),
  (p) => [domainsQuery(p.id)],
);

const domainRoute = screen(
  '/domains/$domainId',
  () => import('../features/domains/DomainDetail.tsx'),
  (p, params) => [domainQuery(p.id, params.domainId)],
);

const domainDmarcRoute = screen(
  '/domains/$domainId/dmarc',
  () => import('../features/domains/DomainDmarc.tsx'),
  (p, params) => [domainQuery(p.id, params.domainId), domainDmarcQuery(p.id, params.domainId)],
);

const smtpRoute = screen(
  '/smtp',
  () => import('../features/smtp/Smtp.tsx'),
  (p) => [accountStatusQuery(p.id)],
);

const webhooksRoute = screen(
  '/webhooks',
  () => import('../features/webhooks/Webhooks.tsx'),
  (p) => [webhooksQuery(p.id)],
);

const webhookRoute = screen(
  '/webhooks/$webhookId',
  () => import('../features/webhooks/WebhookDetail.tsx'),
  (p, params) => [webhookQuery(p.id, params.webhookId), deliveriesQuery(p.id, params.webhookId, 1)],
);

const suppressionsRoute = screen(
  '/suppressions',
  () => import('../features/suppressions/Suppressions.tsx'),
  (p) => [suppressionsQuery(p.id, { page: 1 })],
);

const inboundRoute = screen(
  '/inbound',
  () => import('../features/inbound/Inbound.tsx'),
  (p) => [accountStatusQuery(p.id), inboundListQuery(p.id, { page: 1 })],
);

const inboundEmailRoute = screen(
  '/inbound/$inboundId',
  () => import('../features/inbound/InboundDetail.tsx'),
  (p, params) => [inboundQuery(p.id, params.inboundId)],
);

export const sendingRoutes = [
  emailsRoute,
  emailRoute,
  keysRoute,
  domainsRoute,
  domainRoute,
  domainDmarcRoute,
  smtpRoute,
  webhooksRoute,
  webhookRoute,
  suppressionsRoute,
  inboundRoute,
  inboundEmailRoute,
] as const;
