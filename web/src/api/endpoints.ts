import { queryOptions } from '@tanstack/react-query';
import { ApiError, dashboardApi, request, setCsrfToken, v1 } from './client.ts';
import type {
  AccountStatus,
  ApiKey,
  Email,
  EmailWithEvents,
  InvitationPreview,
  Limits,
  Page,
  Session,
} from './types.ts';

/** Every endpoint the screens call, in one place. */

/** The signed-in person, or null when signed out (GET /api/session answers 401). */
export const sessionQuery = queryOptions({
  queryKey: ['session'],
  queryFn: async (): Promise<Session | null> => {
    try {
      const session = await request<Session>('GET', '/api/session');
      setCsrfToken(session.csrf_token);
      return session;
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        setCsrfToken(null);
        return null;
      }
      throw err;
    }
  },
  staleTime: 60_000,
});

export const auth = {
  requestCode: (email: string) => dashboardApi<{ sent: boolean }>('POST', '/auth/login', { email }),
  verifyCode: (email: string, code: string) => dashboardApi('POST', '/auth/login/verify', { email, code }),
  signInWithPassword: (email: string, password: string) =>
    dashboardApi('POST', '/auth/login/password', { email, password }),
  forgotPassword: (email: string) => dashboardApi('POST', '/auth/forgot', { email }),
  resetPassword: (token: string, password: string) =>
    dashboardApi('POST', '/auth/reset', { token, password }),
  signOut: () => dashboardApi('POST', '/auth/logout'),
};

export const invitations = {
  preview: (token: string) =>
    dashboardApi<InvitationPreview>('GET', `/invitations/${encodeURIComponent(token)}`),
  accept: (token: string, body: { name?: string; accept_terms?: boolean }) =>
    dashboardApi('POST', `/invitations/${encodeURIComponent(token)}/accept`, body),
};

export const limitsQuery = (projectId: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'limits'],
    queryFn: () => v1<Limits>('GET', projectId, '/limits'),
  });

export const accountStatusQuery = (projectId: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'me'],
    queryFn: () => v1<AccountStatus>('GET', projectId, '/me'),
  });

export const keysQuery = (projectId: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'keys'],
    queryFn: () =>
      v1<{ data: ApiKey[] }>('GET', projectId, `/projects/${encodeURIComponent(projectId)}/api-keys`),
  });

export interface NewKey {
  name: string;
  scope: 'project' | 'all_access';
  expires_in_days: 30 | 90 | 365 | null;
}

export const keys = {
  /** The dashboard's own key endpoint (spec: {app_url}/api/teams/{team_id}/api-keys): it takes a scope. */
  create: (projectId: string, body: NewKey) =>
    dashboardApi<ApiKey>('POST', `/teams/${encodeURIComponent(projectId)}/api-keys`, body),
  revoke: (projectId: string, id: string) =>
    v1<null>('DELETE', projectId, `/api-keys/${encodeURIComponent(id)}`),
};

export interface EmailFilters {
  status?: string;
  to?: string;
  page: number;
}

export const EMAILS_PER_PAGE = 25;

export const emailsQuery = (projectId: string, f: EmailFilters) =>
  queryOptions({
    queryKey: ['project', projectId, 'emails', f],
    queryFn: () =>
      v1<Page<Email> & { total_estimated: boolean }>('GET', projectId, '/emails', {
        query: {
          status: f.status,
          to: f.to,
          limit: EMAILS_PER_PAGE,
          offset: (f.page - 1) * EMAILS_PER_PAGE,
        },
      }),
  });

export const emailQuery = (projectId: string, id: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'email', id],
    queryFn: () => v1<EmailWithEvents>('GET', projectId, `/emails/${encodeURIComponent(id)}`),
  });
