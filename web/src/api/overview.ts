import { api, projectQuery, type Schemas } from './client.ts';

/** The overview's and the message page's calls: sending statistics and a message's raw source. */

export type EmailStats = Schemas['EmailStats'];
export type DayCounts = EmailStats['totals'];
/** A rate over the period against the thresholds mailbox providers act on (fractions: 0.02 is 2%). */
export type Rate = EmailStats['bounce_rate'];

export const STATS_PERIODS = [7, 30, 90] as const;
/** The period the overview opens with. */
export const DEFAULT_STATS_DAYS = 30;

export const emailStatsQuery = (projectId: string, days: number) =>
  projectQuery(
    projectId,
    ['email-stats', days],
    () => api.get('/v1/emails/stats', { project: projectId, query: { days } }),
    {
      // today's counts grow while mail goes out
      refetchInterval: 60_000,
    },
  );

/** GET /v1/emails/{id}/raw: the MIME source as delivery composes it (text, not JSON). */
export const rawSourceQuery = (projectId: string, id: string) =>
  projectQuery(
    projectId,
    ['email', id, 'raw'],
    () => api.get('/v1/emails/{id}/raw', { project: projectId, path: { id } }),
    { staleTime: Number.POSITIVE_INFINITY },
  );

export type RevenueGroup = 'day' | 'event' | 'campaign' | 'flow';

/** GET /v1/reports/revenue: revenue from tracked events with a value, per currency, by a group. */
export const revenueQuery = (projectId: string, by: RevenueGroup) =>
  projectQuery(projectId, ['revenue', by], () =>
    api.get('/v1/reports/revenue', { project: projectId, query: { group_by: by } }),
  );
