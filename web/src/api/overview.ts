import { queryOptions } from '@tanstack/react-query';
import { v1 } from './client.ts';

/** The overview's and the message page's calls: sending statistics and a message's raw source. */

export interface DayCounts {
  sent: number;
  delivered: number;
  bounced: number;
  complained: number;
}

export type RateLevel = 'good' | 'warning' | 'critical';

/** A rate over the period against the thresholds mailbox providers act on (fractions: 0.02 is 2%). */
export interface Rate {
  value: number | null;
  warning_at: number;
  critical_at: number;
  level: RateLevel | null;
}

/** GET /v1/emails/stats: one entry per UTC day, oldest first, and the period's totals and rates. */
export interface EmailStats {
  object: 'email_stats';
  days: number;
  from: string;
  to: string;
  data: (DayCounts & { date: string })[];
  totals: DayCounts;
  bounce_rate: Rate;
  complaint_rate: Rate;
}

export const STATS_PERIODS = [7, 30, 90] as const;

export const emailStatsQuery = (projectId: string, days: number) =>
  queryOptions({
    queryKey: ['project', projectId, 'email-stats', days],
    queryFn: () => v1<EmailStats>('GET', projectId, '/emails/stats', { query: { days } }),
    // today's counts grow while mail goes out
    refetchInterval: 60_000,
  });

/** GET /v1/emails/{id}/raw: the MIME source as delivery composes it (text, not JSON). */
export const rawSourceQuery = (projectId: string, id: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'email', id, 'raw'],
    queryFn: () => v1<string>('GET', projectId, `/emails/${encodeURIComponent(id)}/raw`),
    staleTime: Number.POSITIVE_INFINITY,
  });
