import { api, projectQuery, type Schemas } from './client.ts';
import { pageOf } from './endpoints.ts';

export type Campaign = Schemas['Campaign'];
export type CampaignInput = Schemas['UpdateCampaignRequest'];
/** An A/B test as the builder sets it: variants of the subject (and sender name), a test share and a winner rule. */
export type AbTestInput = Schemas['CampaignAbTest'];
export type CampaignActivity = Schemas['CampaignActivity'];

export const CAMPAIGNS_PER_PAGE = 25;

export const campaignsQuery = (project: string, page: number) =>
  projectQuery(project, ['campaigns', page], () =>
    api.get('/v1/campaigns', { project, query: pageOf(page, CAMPAIGNS_PER_PAGE) }),
  );

/** One campaign with every count, polled every 2 s while it sends (the progress view). */
export const campaignQuery = (project: string, id: string) =>
  projectQuery(project, ['campaign', id], () => api.get('/v1/campaigns/{id}', { project, path: { id } }), {
    refetchInterval: (query) => (query.state.data?.status === 'sending' ? 2_000 : false),
  });

/**
 * What sending the campaign now needs, item by item (the checks /send runs), as saved at `key`;
 * read again on every visit, since a fix is made on another screen (Settings, Domains, Lists).
 */
export const checklistQuery = (project: string, id: string, key: string) =>
  projectQuery(
    project,
    ['campaign', id, 'checklist', key],
    () => api.get('/v1/campaigns/{id}/checklist', { project, path: { id } }),
    { staleTime: 0 },
  );
export type CampaignChecklist = Schemas['CampaignChecklist'];

/**
 * How many the campaign reaches, as saved at `key`; read again on every visit like the checklist
 * (the builder's key starts at the campaign's creation on each visit, and people are added on other
 * screens): a count cached on an earlier visit kept Send off beside a checklist all done.
 */
export const audienceQuery = (project: string, id: string, key: string) =>
  projectQuery(
    project,
    ['campaign', id, 'audience', key],
    () => api.get('/v1/campaigns/{id}/audience', { project, path: { id } }),
    { staleTime: 0 },
  );

export const campaigns = {
  create: (project: string, body: Schemas['CreateCampaignRequest']) =>
    api.post('/v1/campaigns', { project, body }),
  update: (project: string, id: string, body: CampaignInput) =>
    api.patch('/v1/campaigns/{id}', { project, path: { id }, body }),
  send: (project: string, id: string) =>
    api.post('/v1/campaigns/{id}/send', { project, path: { id }, body: {} }),
  /** Sends although the bulk-sender checks fail: admins only, the reason recorded. */
  sendAnyway: (project: string, id: string, reason: string) =>
    api.post('/v1/campaigns/{id}/send', { project, path: { id }, body: { gate_override: { reason } } }),
  schedule: (project: string, id: string, scheduledAt: string) =>
    api.post('/v1/campaigns/{id}/schedule', { project, path: { id }, body: { scheduled_at: scheduledAt } }),
  test: (project: string, id: string, to: string[]) =>
    api.post('/v1/campaigns/{id}/test', { project, path: { id }, body: { to } }),
  pause: (project: string, id: string) => api.post('/v1/campaigns/{id}/pause', { project, path: { id } }),
  resume: (project: string, id: string, reason?: string) =>
    api.post('/v1/campaigns/{id}/resume', { project, path: { id }, body: reason ? { reason } : {} }),
  cancel: (project: string, id: string) => api.post('/v1/campaigns/{id}/cancel', { project, path: { id } }),
};

/** A campaign over time and its most clicked links, refreshed every 5 s while it sends. */
export const activityQuery = (project: string, id: string, sending: boolean) =>
  projectQuery(
    project,
    ['campaign', id, 'activity'],
    () => api.get('/v1/campaigns/{id}/activity', { project, path: { id } }),
    { refetchInterval: sending ? 5_000 : false },
  );
