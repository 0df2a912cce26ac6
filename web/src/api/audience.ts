import { queryOptions } from '@tanstack/react-query';
import { dashboardApi, v1 } from './client.ts';
import type { ApiKey, Page, Role } from './types.ts';

/**
 * The audience and settings screens' calls: contacts, lists, segments (`/v1`), the project's
 * settings and the account API (`/v1`), and the dashboard-only members, invitations, password and
 * sessions (`{app_url}/api`). Shapes as the API documents them (GET /v1/openapi.json).
 */

export type PropertyValue = string | number | boolean;

export interface Contact {
  id: string;
  object: 'contact';
  email: string;
  first_name: string | null;
  last_name: string | null;
  properties: Record<string, PropertyValue>;
  subscribed: boolean;
  /** Ids of the lists the contact is subscribed to. */
  lists: string[];
  created_at: string;
  updated_at: string;
}

export interface ConsentEntry {
  status: 'granted' | 'withdrawn';
  source: string | null;
  ip: string | null;
  text: string | null;
  created_at: string;
}

export interface ContactWithConsent extends Contact {
  consent_history: ConsentEntry[];
}

export interface TrackedEvent {
  id: string;
  object: 'event';
  event: string;
  email: string;
  contact_id: string;
  properties: Record<string, unknown>;
  value: number | null;
  currency: string | null;
  quantity: number | null;
  campaign_id: string | null;
  flow_id: string | null;
  created_at: string;
}

export interface ContactList {
  id: string;
  object: 'list';
  name: string;
  description: string | null;
  member_count: number;
  unsubscribed_count: number;
  created_at: string;
  updated_at: string;
}

export interface ListChange {
  object: 'list_change';
  list_id: string;
  added?: number;
  already_members?: number;
  contacts_created?: number;
}

/** A segment definition as the API takes it: {"all": [...]} or {"any": [...]} (screens/segment-rows.ts makes it editable rows). */
export type Definition = { all: object[] } | { any: object[] };

export interface Segment {
  id: string;
  object: 'segment';
  name: string;
  description: string | null;
  definition: Definition;
  created_at: string;
  updated_at: string;
}

export interface SendingRate {
  per_second: number | null;
  per_hour: number | null;
}

export interface Workspace {
  id: string;
  name: string;
  plan: string;
  role?: string;
  created_at: string;
}

export interface Project {
  id: string;
  name: string;
  workspace_id: string;
  role?: Role;
  created_at: string;
}

export interface Member {
  account_id: string;
  email: string;
  name: string;
  role: Role;
  created_at: string;
}

export interface Invitation {
  id: string;
  email: string;
  role: Role;
  status: 'pending' | 'accepted' | 'expired';
  expires_at: string;
}

export interface SessionItem {
  id: string;
  current: boolean;
  ip: string | null;
  user_agent: string | null;
  created_at: string;
  last_used_at: string;
  expires_at: string;
}

const enc = encodeURIComponent;

// ---- contacts

export const CONTACTS_PER_PAGE = 25;

export interface ContactFilters {
  search?: string;
  list?: string;
  segment?: string;
  subscribed?: boolean;
  page: number;
}

export const contactsQuery = (projectId: string, f: ContactFilters) =>
  queryOptions({
    queryKey: ['project', projectId, 'contacts', f],
    queryFn: () =>
      v1<Page<Contact>>('GET', projectId, '/contacts', {
        query: {
          search: f.search,
          list: f.list,
          segment: f.segment,
          subscribed: f.subscribed === undefined ? undefined : String(f.subscribed),
          limit: CONTACTS_PER_PAGE,
          offset: (f.page - 1) * CONTACTS_PER_PAGE,
        },
      }),
  });

export const contactQuery = (projectId: string, id: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'contact', id],
    queryFn: () => v1<ContactWithConsent>('GET', projectId, `/contacts/${enc(id)}`),
  });

export const contactEventsQuery = (projectId: string, id: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'contact', id, 'events'],
    queryFn: () =>
      v1<Page<TrackedEvent>>('GET', projectId, `/contacts/${enc(id)}/events`, { query: { limit: 20 } }),
  });

export interface NewContact {
  email: string;
  first_name?: string | null;
  last_name?: string | null;
  subscribed?: boolean;
  consent?: { status: 'granted' | 'withdrawn'; source?: string };
}

export const contacts = {
  create: (projectId: string, body: NewContact) => v1<Contact>('POST', projectId, '/contacts', { body }),
  update: (projectId: string, id: string, body: Partial<NewContact>) =>
    v1<ContactWithConsent>('PATCH', projectId, `/contacts/${enc(id)}`, { body }),
  remove: (projectId: string, id: string) => v1<null>('DELETE', projectId, `/contacts/${enc(id)}`),
};

// ---- lists

export const listsQuery = (projectId: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'lists'],
    queryFn: () => v1<{ data: ContactList[] }>('GET', projectId, '/lists'),
  });

export const lists = {
  create: (projectId: string, body: { name: string; description?: string | null }) =>
    v1<ContactList>('POST', projectId, '/lists', { body }),
  addEmails: (projectId: string, id: string, emails: string[]) =>
    v1<ListChange>('POST', projectId, `/lists/${enc(id)}/contacts`, { body: { emails } }),
  remove: (projectId: string, id: string) => v1<null>('DELETE', projectId, `/lists/${enc(id)}`),
};

// ---- segments

export const segmentsQuery = (projectId: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'segments'],
    queryFn: () => v1<{ data: Segment[] }>('GET', projectId, '/segments'),
  });

export const segmentQuery = (projectId: string, id: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'segment', id],
    queryFn: () => v1<Segment>('GET', projectId, `/segments/${enc(id)}`),
  });

/** How many contacts a saved segment holds now (GET /v1/segments/{id}/count). */
export const segmentCountQuery = (projectId: string, id: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'segment', id, 'count'],
    queryFn: () => v1<{ count: number }>('GET', projectId, `/segments/${enc(id)}/count`),
  });

/**
 * How many contacts an unsaved definition matches (POST /v1/segments/preview), for the editor's
 * live count. `null` when the server has no such endpoint (older servers): the editor then shows
 * the saved segment's count only.
 */
export const segmentPreviewQuery = (projectId: string, definition: Definition | null) =>
  queryOptions({
    queryKey: ['project', projectId, 'segment-preview', JSON.stringify(definition)],
    queryFn: async (): Promise<{ count: number } | null> => {
      try {
        return await v1<{ count: number }>('POST', projectId, '/segments/preview', { body: { definition } });
      } catch (err) {
        if (isMissingEndpoint(err)) return null;
        throw err;
      }
    },
    enabled: definition !== null,
    staleTime: 5_000,
  });

function isMissingEndpoint(err: unknown): boolean {
  const e = err as { status?: number; message?: string };
  return e.status === 404 && /^No endpoint /.test(e.message ?? '');
}

export interface SegmentInput {
  name: string;
  description: string | null;
  definition: Definition;
}

export const segments = {
  create: (projectId: string, body: SegmentInput) => v1<Segment>('POST', projectId, '/segments', { body }),
  update: (projectId: string, id: string, body: SegmentInput) =>
    v1<Segment>('PATCH', projectId, `/segments/${enc(id)}`, { body }),
  remove: (projectId: string, id: string) => v1<null>('DELETE', projectId, `/segments/${enc(id)}`),
};

// ---- settings

export const sendingRateQuery = (projectId: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'sending-rate'],
    queryFn: () => v1<SendingRate>('GET', projectId, '/me/sending-rate'),
  });

export const workspacesQuery = (projectId: string) =>
  queryOptions({
    queryKey: ['account', 'workspaces'],
    queryFn: () => v1<{ data: Workspace[] }>('GET', projectId, '/workspaces'),
  });

export const projectsQuery = (projectId: string) =>
  queryOptions({
    queryKey: ['account', 'projects'],
    queryFn: () => v1<{ data: Project[] }>('GET', projectId, '/projects'),
  });

export const settings = {
  setFooter: (projectId: string, address: string) =>
    v1<{ address: string }>('PATCH', projectId, '/me/footer', { body: { address } }),
  setSendingRate: (projectId: string, body: SendingRate) =>
    v1<SendingRate>('PATCH', projectId, '/me/sending-rate', { body }),
  createProject: (projectId: string, body: { name: string; workspace_id: string }) =>
    v1<Project>('POST', projectId, '/projects', { body }),
};

// ---- members (dashboard API)

export const membersQuery = (projectId: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'members'],
    queryFn: () => dashboardApi<{ data: Member[] }>('GET', `/projects/${enc(projectId)}/members`),
  });

export const invitationsQuery = (projectId: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'invitations'],
    queryFn: () => dashboardApi<{ data: Invitation[] }>('GET', `/projects/${enc(projectId)}/invitations`),
  });

/** The project keys a member made here, which removing them revokes unless they are kept. */
export const memberKeysQuery = (projectId: string, accountId: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'members', accountId, 'keys'],
    queryFn: () =>
      dashboardApi<{ data: ApiKey[] }>('GET', `/projects/${enc(projectId)}/members/${enc(accountId)}/keys`),
  });

export const members = {
  withdraw: (projectId: string, id: string) =>
    dashboardApi<null>('DELETE', `/projects/${enc(projectId)}/invitations/${enc(id)}`),
  invite: (projectId: string, body: { email: string; role: Role }) =>
    dashboardApi<Invitation>('POST', `/projects/${enc(projectId)}/invitations`, body),
  changeRole: (projectId: string, accountId: string, role: Role) =>
    dashboardApi<Member>('PATCH', `/projects/${enc(projectId)}/members/${enc(accountId)}`, { role }),
  remove: (projectId: string, accountId: string, keepKeys = false) =>
    dashboardApi<null>(
      'DELETE',
      `/projects/${enc(projectId)}/members/${enc(accountId)}${keepKeys ? '?keep_keys=true' : ''}`,
    ),
};

// ---- the signed-in account (dashboard API)

export const sessionsQuery = queryOptions({
  queryKey: ['account', 'sessions'],
  queryFn: () => dashboardApi<{ data: SessionItem[] }>('GET', '/sessions'),
});

export const account = {
  setPassword: (password: string) =>
    dashboardApi<{ has_password: boolean }>('POST', '/auth/password', { password }),
  revokeSession: (id: string) => dashboardApi<null>('DELETE', `/sessions/${enc(id)}`),
};
