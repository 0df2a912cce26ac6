import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import {
  contactEventsQuery,
  contactQuery,
  contactsQuery,
  importQuery,
  listsQuery,
  segmentQuery,
  segmentsQuery,
} from '../api/audience.ts';
import { topicsQuery } from '../api/topics.ts';
import { appRoute, load, pageNumber, screen, text } from './base.tsx';

/** The audience screens: contacts (and their import), lists, topics and segments. */

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
  component: lazyRouteComponent(() => import('../features/contacts/Contacts.tsx')),
});

const contactImportRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/contacts/import',
  validateSearch: (search: Record<string, unknown>): { import?: string } => ({ import: text(search.import) }),
  loaderDeps: ({ search }) => search,
  loader: ({ context, deps }) => load(context, (p) => [!!deps.import && importQuery(p.id, deps.import)]),
  component: lazyRouteComponent(() => import('../features/contacts/ContactImport.tsx')),
});

const contactRoute = screen(
  '/contacts/$contactId',
  () => import('../features/contacts/ContactDetail.tsx'),
  (p, params) => [
    contactQuery(p.id, params.contactId),
    contactEventsQuery(p.id, params.contactId),
    listsQuery(p.id),
  ],
);

const listsRoute = screen(
  '/lists',
  () => import('../features/lists/Lists.tsx'),
  (p) => [listsQuery(p.id)],
);

const topicsRoute = screen(
  '/topics',
  () => import('../features/topics/Topics.tsx'),
  (p) => [topicsQuery(p.id)],
);

const segmentsRoute = screen(
  '/segments',
  () => import('../features/segments/Segments.tsx'),
  (p) => [segmentsQuery(p.id)],
);

const segmentRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/segments/$segmentId',
  loader: ({ context, params: { segmentId } }) =>
    load(context, (p) => [segmentId !== 'new' && segmentQuery(p.id, segmentId), listsQuery(p.id)]),
  component: lazyRouteComponent(() => import('../features/segments/SegmentEditor.tsx')),
});

export const audienceRoutes = [
  contactsRoute,
  contactImportRoute,
  contactRoute,
  listsRoute,
  topicsRoute,
  segmentsRoute,
  segmentRoute,
] as const;
