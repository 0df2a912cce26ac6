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
  action: (projectId: string, id: string, action: 'pause' | 'resume' | 'cancel') =>
    v1<Campaign>('POST', projectId, `/campaigns/${enc(id)}/${action}`),
};
