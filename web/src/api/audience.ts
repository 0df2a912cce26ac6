import { queryOptions, skipToken } from '@tanstack/react-query';
import { ApiError, api, postCsv, projectQuery, type Schemas } from './client.ts';
import { pageOf, type Role } from './endpoints.ts';
import type { SendingRate } from './sending.ts';

/**
 * The audience and settings screens' calls: contacts, lists, segments (`/v1`), the project's
 * settings and the account API (`/v1`), and the dashboard-only members, invitations, password and
 * sessions (`{app_url}/api`).
 */

export type Contact = Schemas['Contact'];
export type ContactImport = Schemas['ContactImport'];
export type ContactWithConsent = Schemas['ContactWithConsent'];
export type TrackedEvent = Schemas['Event'];
export type ContactList = Schemas['ContactList'];
export type ListChange = Schemas['ListChange'];
/** A segment definition as the API takes it: {"all": [...]} or {"any": [...]} (segment-rows.ts makes it editable rows). */
export type Definition = Schemas['SegmentDefinition'];
export type Segment = Schemas['Segment'];
export type Workspace = Schemas['Workspace'];
export type Member = Schemas['ProjectMember'];
export type Invitation = Schemas['Invitation'];
export type SessionItem = Schemas['SessionListItem'];

// ---- contacts

export const CONTACTS_PER_PAGE = 25;

export interface ContactFilters {
  search?: string;
  list?: string;
  segment?: string;
  subscribed?: boolean;
  page: number;
}

export const contactsQuery = (project: string, f: ContactFilters) =>
  projectQuery(project, ['contacts', f], () =>
    api.get('/v1/contacts', {
      project,
      query: {
        search: f.search,
        list: f.list,
        segment: f.segment,
        subscribed: f.subscribed,
        ...pageOf(f.page, CONTACTS_PER_PAGE),
      },
    }),
  );

export const contactQuery = (project: string, id: string) =>
  projectQuery(project, ['contact', id], () => api.get('/v1/contacts/{id}', { project, path: { id } }));

export const contactEventsQuery = (project: string, id: string) =>
  projectQuery(project, ['contact', id, 'events'], () =>
    api.get('/v1/contacts/{id}/events', { project, path: { id }, query: { limit: 20 } }),
  );

/** An import, asked again every second until it has finished. */
export const importQuery = (project: string, id: string) =>
  projectQuery(project, ['import', id], () => api.get('/v1/imports/{id}', { project, path: { id } }), {
    refetchInterval: (query) => (importFinished(query.state.data) ? false : 1_000),
  });

export const importFinished = (i: ContactImport | undefined) =>
  i?.status === 'completed' || i?.status === 'failed';

export const imports = {
  /** Uploads a CSV file as it is: the import starts at once and runs in the background. */
  start: (project: string, file: Blob) => postCsv('/v1/contacts/import', { project, file }),
};

export const contacts = {
  create: (project: string, body: Schemas['CreateContactRequest']) =>
    api.post('/v1/contacts', { project, body }),
  update: (project: string, id: string, body: Schemas['UpdateContactRequest']) =>
    api.patch('/v1/contacts/{id}', { project, path: { id }, body }),
  remove: (project: string, id: string) => api.delete('/v1/contacts/{id}', { project, path: { id } }),
};

// ---- lists

export const listsQuery = (project: string) =>
  projectQuery(project, ['lists'], () => api.get('/v1/lists', { project }));

export const lists = {
  create: (project: string, body: Schemas['CreateListRequest']) => api.post('/v1/lists', { project, body }),
  addEmails: (project: string, id: string, emails: string[]) =>
    api.post('/v1/lists/{id}/contacts', { project, path: { id }, body: { emails } }),
};

// ---- segments

export const segmentsQuery = (project: string) =>
  projectQuery(project, ['segments'], () => api.get('/v1/segments', { project }));

export const segmentQuery = (project: string, id: string) =>
  projectQuery(project, ['segment', id], () => api.get('/v1/segments/{id}', { project, path: { id } }));

/** How many contacts a saved segment holds now (GET /v1/segments/{id}/count). */
export const segmentCountQuery = (project: string, id: string) =>
  projectQuery(project, ['segment', id, 'count'], () =>
    api.get('/v1/segments/{id}/count', { project, path: { id } }),
  );

/**
 * How many contacts an unsaved definition matches (POST /v1/segments/preview), for the editor's
 * live count. `null` when the server has no such endpoint (older servers): the editor then shows
 * the saved segment's count only.
 */
export const segmentPreviewQuery = (project: string, definition: Definition | null) =>
  queryOptions({
    queryKey: ['project', project, 'segment-preview', JSON.stringify(definition)],
    queryFn:
      definition === null
        ? skipToken
        : async () => {
            try {
              return await api.post('/v1/segments/preview', { project, body: { definition } });
            } catch (err) {
              if (isMissingEndpoint(err)) return null;
              throw err;
            }
          },
    staleTime: 5_000,
  });

function isMissingEndpoint(err: unknown): boolean {
  return err instanceof ApiError && err.status === 404 && /^No endpoint /.test(err.message);
}

export type SegmentInput = Schemas['CreateSegmentRequest'];

export const segments = {
  create: (project: string, body: SegmentInput) => api.post('/v1/segments', { project, body }),
  update: (project: string, id: string, body: SegmentInput) =>
    api.patch('/v1/segments/{id}', { project, path: { id }, body }),
  remove: (project: string, id: string) => api.delete('/v1/segments/{id}', { project, path: { id } }),
};

// ---- settings

export const sendingRateQuery = (project: string) =>
  projectQuery(project, ['sending-rate'], () => api.get('/v1/me/sending-rate', { project }));

/** The signed-in person's workspaces and projects (the account API: no project of its own). */
export const workspacesQuery = queryOptions({
  queryKey: ['account', 'workspaces'],
  queryFn: () => api.get('/v1/workspaces'),
});

export const projectsQuery = queryOptions({
  queryKey: ['account', 'projects'],
  queryFn: () => api.get('/v1/projects'),
});

export const settings = {
  setFooter: (project: string, address: string) => api.patch('/v1/me/footer', { project, body: { address } }),
  setSendingRate: (project: string, body: SendingRate) => api.patch('/v1/me/sending-rate', { project, body }),
  createProject: (body: Schemas['CreateProjectRequest']) => api.post('/v1/projects', { body }),
};

// ---- members (dashboard API)

export const membersQuery = (project: string) =>
  projectQuery(project, ['members'], () =>
    api.get('/api/projects/{project_id}/members', { path: { project_id: project } }),
  );

export const invitationsQuery = (project: string) =>
  projectQuery(project, ['invitations'], () =>
    api.get('/api/projects/{project_id}/invitations', { path: { project_id: project } }),
  );

/** The project keys a member made here, which removing them revokes unless they are kept. */
export const memberKeysQuery = (project: string, accountId: string) =>
  projectQuery(project, ['members', accountId, 'keys'], () =>
    api.get('/api/projects/{project_id}/members/{account_id}/keys', {
      path: { project_id: project, account_id: accountId },
    }),
  );

export const members = {
  withdraw: (project: string, id: string) =>
    api.delete('/api/projects/{project_id}/invitations/{invitation_id}', {
      path: { project_id: project, invitation_id: id },
    }),
  invite: (project: string, body: { email: string; role: Role }) =>
    api.post('/api/projects/{project_id}/invitations', { path: { project_id: project }, body }),
  changeRole: (project: string, accountId: string, role: Role) =>
    api.patch('/api/projects/{project_id}/members/{account_id}', {
      path: { project_id: project, account_id: accountId },
      body: { role },
    }),
  remove: (project: string, accountId: string, keepKeys = false) =>
    api.delete('/api/projects/{project_id}/members/{account_id}', {
      path: { project_id: project, account_id: accountId },
      query: keepKeys ? { keep_keys: true } : {},
    }),
};

// ---- the signed-in account (dashboard API)

export const sessionsQuery = queryOptions({
  queryKey: ['account', 'sessions'],
  queryFn: () => api.get('/api/sessions'),
});

export const account = {
  setPassword: (password: string) => api.post('/api/auth/password', { body: { password } }),
  revokeSession: (id: string) => api.delete('/api/sessions/{id}', { path: { id } }),
};
