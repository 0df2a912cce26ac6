import { queryOptions } from '@tanstack/react-query';
import { ApiError, api, projectQuery, type Schemas, setCsrfToken } from './client.ts';

/** The session, sign-in and invitations, the project's plan and status, API keys and the email log. */

export type Session = Schemas['CurrentSession'];
export type SessionProject = Session['projects'][number];
export type Role = Schemas['ProjectMember']['role'];
export type ApiKey = Schemas['ApiKey'];
export type Email = Schemas['Email'];
export type EmailWithEvents = Schemas['EmailWithEvents'];
export type EmailEvent = Schemas['EmailEvent'];
export type Limits = Schemas['Limits'];
export type AccountStatus = Schemas['AccountStatus'];
export type InvitationPreview = Schemas['InvitationDetails'];

/** `limit` and `offset` of a 1-based page. */
export const pageOf = (page: number, perPage: number) => ({ limit: perPage, offset: (page - 1) * perPage });

/**
 * The signed-in person, or null when signed out: GET /api/session answers null without a cookie (no
 * error for a signed-out page to log), 401 for a session that has ended.
 */
export const sessionQuery = queryOptions({
  queryKey: ['session'],
  queryFn: async (): Promise<Session | null> => {
    try {
      const session = await api.get('/api/session');
      setCsrfToken(session?.csrf_token ?? null);
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
  requestCode: (email: string) => api.post('/api/auth/login', { body: { email } }),
  verifyCode: (email: string, code: string) => api.post('/api/auth/login/verify', { body: { email, code } }),
  signUp: (body: Schemas['DashboardSignupRequest']) => api.post('/api/auth/signup', { body }),
  signInWithPassword: (email: string, password: string) =>
    api.post('/api/auth/login/password', { body: { email, password } }),
  forgotPassword: (email: string) => api.post('/api/auth/forgot', { body: { email } }),
  resetPassword: (token: string, password: string) =>
    api.post('/api/auth/reset', { body: { token, password } }),
  signOut: () => api.post('/api/auth/logout'),
};

/** What an invitation link shows before it is accepted; a bad link's answer will not change. */
export const invitationQuery = (token: string) =>
  queryOptions({
    queryKey: ['invitation', token],
    queryFn: () => api.get('/api/invitations/{token}', { path: { token } }),
    retry: false,
  });

export const invitations = {
  accept: (token: string, body: Schemas['AcceptInvitationRequest']) =>
    api.post('/api/invitations/{token}/accept', { path: { token }, body }),
};

export const limitsQuery = (project: string) =>
  projectQuery(project, ['limits'], () => api.get('/v1/limits', { project }));

export const accountStatusQuery = (project: string) =>
  projectQuery(project, ['me'], () => api.get('/v1/me', { project }));

export const keysQuery = (project: string) =>
  projectQuery(project, ['keys'], () =>
    api.get('/v1/projects/{project_id}/api-keys', { path: { project_id: project } }),
  );

export type NewKey = Schemas['CreateTeamApiKeyRequest'];

export const keys = {
  /** The dashboard's own key endpoint (spec: {app_url}/api/teams/{team_id}/api-keys): it takes a scope. */
  create: (project: string, body: NewKey) =>
    api.post('/api/teams/{team_id}/api-keys', { path: { team_id: project }, body }),
  revoke: (id: string) => api.delete('/v1/api-keys/{id}', { path: { id } }),
};

export interface EmailFilters {
  status?: string;
  to?: string;
  page: number;
}

export const EMAILS_PER_PAGE = 25;

/** The statuses the email log filters by (GET /v1/emails `status`). */
/** An email's status as the API's schema enumerates it. */
export type EmailStatus = Email['status'];
/** Each status once, in the order of an email's life: the compiler holds this to the API's list. */
const STATUS_ORDER: Record<EmailStatus, number> = {
  scheduled: 0,
  queued: 1,
  sending: 2,
  sent: 3,
  delivered: 4,
  deferred: 5,
  bounced: 6,
  complained: 7,
  failed: 8,
  suppressed: 9,
  cancelled: 10,
};
export const EMAIL_STATUSES = (Object.keys(STATUS_ORDER) as EmailStatus[]).sort(
  (a, b) => STATUS_ORDER[a] - STATUS_ORDER[b],
);

export const emailsQuery = (project: string, f: EmailFilters) =>
  projectQuery(project, ['emails', f], () =>
    api.get('/v1/emails', {
      project,
      query: { status: f.status, to: f.to, ...pageOf(f.page, EMAILS_PER_PAGE) },
    }),
  );

export const emailQuery = (project: string, id: string) =>
  projectQuery(project, ['email', id], () => api.get('/v1/emails/{id}', { project, path: { id } }));

export type SendEmail = Schemas['SendEmailRequest'];

export const emails = {
  send: (project: string, body: SendEmail) => api.post('/v1/emails', { project, body }),
};
