import { queryOptions } from '@tanstack/react-query';
import { api, type Schemas } from './client.ts';
import { pageOf } from './endpoints.ts';

/**
 * The dev mailbox (GET /api/mailbox…): mail the server captured because no relay is configured.
 * Read without a session, so not a project's query: its keys start with `mailbox`.
 */

export type MailboxStatus = Schemas['MailboxStatus'];
export type MailboxSummary = Schemas['MailboxMessageSummary'];
export type MailboxMessage = Schemas['MailboxMessage'];

export const MAILBOX_PER_PAGE = 25;
/** How often the list asks for new mail while it is shown (a code is on its way). */
export const MAILBOX_REFRESH_MS = 3_000;

/** Whether this browser may read the dev mailbox, and if not, why (the server decides). */
export const mailboxStatusQuery = queryOptions({
  queryKey: ['mailbox', 'status'],
  queryFn: () => api.get('/api/mailbox/status'),
  staleTime: 60_000,
});

export const mailboxListQuery = (f: { to?: string; page: number }) =>
  queryOptions({
    queryKey: ['mailbox', 'list', f],
    queryFn: () => api.get('/api/mailbox', { query: { to: f.to, ...pageOf(f.page, MAILBOX_PER_PAGE) } }),
  });

export const mailboxMessageQuery = (id: string) =>
  queryOptions({
    queryKey: ['mailbox', 'message', id],
    queryFn: () => api.get('/api/mailbox/{id}', { path: { id } }),
    // a captured message never changes
    staleTime: Number.POSITIVE_INFINITY,
  });

export const mailboxRawQuery = (id: string) =>
  queryOptions({
    queryKey: ['mailbox', 'message', id, 'raw'],
    queryFn: () => api.get('/api/mailbox/{id}/raw', { path: { id } }),
    staleTime: Number.POSITIVE_INFINITY,
  });
