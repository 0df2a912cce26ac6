import { queryOptions } from '@tanstack/react-query';
import { v1 } from './client.ts';
import type { Page } from './types.ts';

export type CampaignStatus = 'draft' | 'scheduled' | 'sending' | 'sent' | 'paused' | 'cancelled' | 'failed';

export interface CampaignStats {
  recipients: number;
  sent?: number;
  delivered?: number;
  bounced?: number;
  complained?: number;
  opens?: { unique: number; total: number };
  clicks?: { unique: number; total: number };
  unsubscribed?: number;
  revenue: { currency: string; amount: number; events: number }[];
}

export interface AbVariantResult {
  index: number;
  name: string;
  recipients: number;
  sent: number;
  opens_unique: number;
  clicks_unique: number;
}

/** An A/B test as the builder sets it: variants of the subject (and sender name), a test share and a winner rule. */
export interface AbTestInput {
  variants: { name?: string; subject?: string; from_name?: string }[];
  test_share: number;
  winner_by: 'opens' | 'clicks' | 'revenue' | 'manual';
  wait_minutes?: number;
}

export interface Campaign {
  id: string;
  name: string;
  status: CampaignStatus;
  from: string | null;
  subject: string | null;
  preheader: string | null;
  template_id: string | null;
  html: string | null;
  list_ids: string[];
  segment_ids: string[];
  tracking: { opens: boolean; clicks: boolean };
  ab_test: AbTestInput | null;
  stats?: CampaignStats;
  ab?: { phase: string; winner_variant: number | null; variants: AbVariantResult[] } | null;
  scheduled_at: string | null;
  failure_reason: string | null;
  recipient_count: number | null;
  started_at: string | null;
  finished_at: string | null;
  created_at: string;
}

export interface CampaignInput {
  name?: string;
  from?: string | null;
  subject?: string | null;
  preheader?: string | null;
  template_id?: string | null;
  html?: string | null;
  list_ids?: string[];
  segment_ids?: string[];
  tracking?: { opens: boolean; clicks: boolean };
  ab_test?: AbTestInput | null;
}

export const CAMPAIGNS_PER_PAGE = 25;
const enc = encodeURIComponent;

export const campaignsQuery = (projectId: string, page: number) =>
  queryOptions({
    queryKey: ['project', projectId, 'campaigns', page],
    queryFn: () =>
      v1<Page<Campaign>>('GET', projectId, '/campaigns', {
        query: { limit: CAMPAIGNS_PER_PAGE, offset: (page - 1) * CAMPAIGNS_PER_PAGE },
      }),
  });

/** One campaign with every count, polled every 2 s while it sends (the progress view). */
export const campaignQuery = (projectId: string, id: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'campaign', id],
    queryFn: () => v1<Campaign>('GET', projectId, `/campaigns/${enc(id)}`),
    refetchInterval: (query) => (query.state.data?.status === 'sending' ? 2_000 : false),
  });

export const audienceQuery = (projectId: string, id: string, key: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'campaign', id, 'audience', key],
    queryFn: () => v1<{ recipients: number }>('GET', projectId, `/campaigns/${enc(id)}/audience`),
  });

export const campaigns = {
  create: (projectId: string, body: CampaignInput & { name: string }) =>
    v1<Campaign>('POST', projectId, '/campaigns', { body }),
  update: (projectId: string, id: string, body: CampaignInput) =>
    v1<Campaign>('PATCH', projectId, `/campaigns/${enc(id)}`, { body }),
  remove: (projectId: string, id: string) => v1<null>('DELETE', projectId, `/campaigns/${enc(id)}`),
  send: (projectId: string, id: string) => v1<Campaign>('POST', projectId, `/campaigns/${enc(id)}/send`),
  schedule: (projectId: string, id: string, scheduledAt: string) =>
    v1<Campaign>('POST', projectId, `/campaigns/${enc(id)}/schedule`, {
      body: { scheduled_at: scheduledAt },
    }),
  test: (projectId: string, id: string, to: string[]) =>
    v1<{ sent: { to: string; email_id: string }[] }>('POST', projectId, `/campaigns/${enc(id)}/test`, {
      body: { to },
    }),
  action: (projectId: string, id: string, action: 'pause' | 'resume' | 'cancel') =>
    v1<Campaign>('POST', projectId, `/campaigns/${enc(id)}/${action}`),
};

export interface CampaignActivity {
  bucket_seconds: number;
  buckets: { start: string; sent: number; delivered: number; bounced: number }[];
  top_links: { url: string; clicks_unique: number; clicks_total: number }[];
}

/** A campaign over time and its most clicked links, refreshed every 5 s while it sends. */
export const activityQuery = (projectId: string, id: string, sending: boolean) =>
  queryOptions({
    queryKey: ['project', projectId, 'campaign', id, 'activity'],
    queryFn: () => v1<CampaignActivity>('GET', projectId, `/campaigns/${enc(id)}/activity`),
    refetchInterval: sending ? 5_000 : false,
  });
