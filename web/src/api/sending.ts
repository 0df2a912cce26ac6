import { queryOptions } from '@tanstack/react-query';
import { ApiError, v1 } from './client.ts';
import type { AccountStatus, Page } from './types.ts';

/**
 * The sending screens' calls, all on `/v1`: sending domains, webhooks and their deliveries,
 * suppressions and inbound mail. Shapes as the API documents them (GET /v1/openapi.json).
 */

export interface SendingRate {
  per_second: number | null;
  per_hour: number | null;
}

export type RecordStatus = 'pending' | 'verified' | 'mismatch' | 'missing';

export interface DnsRecord {
  type: 'TXT' | 'MX';
  name: string;
  value: string;
  priority?: number;
  purpose: string;
  required: boolean;
  status: RecordStatus;
  /** What DNS answered, when it differs from `value`. */
  found?: string[];
}

export interface Domain {
  id: string;
  object: 'domain';
  name: string;
  status: 'pending' | 'verified' | 'failed';
  records: DnsRecord[];
  created_at: string;
  verified_at: string | null;
  last_checked_at: string | null;
  inbound_enabled: boolean;
  rate: SendingRate;
}

export const domainsQuery = (projectId: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'domains'],
    queryFn: () => v1<{ data: Domain[] }>('GET', projectId, '/domains'),
  });

export const domainQuery = (projectId: string, id: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'domain', id],
    queryFn: () => v1<Domain>('GET', projectId, `/domains/${encodeURIComponent(id)}`),
  });

const domainPath = (id: string) => `/domains/${encodeURIComponent(id)}`;

export const domains = {
  add: (projectId: string, domain: string) => v1<Domain>('POST', projectId, '/domains', { body: { domain } }),
  check: (projectId: string, id: string) => v1<Domain>('POST', projectId, `${domainPath(id)}/check`),
  update: (projectId: string, id: string, body: { inbound_enabled?: boolean; rate?: SendingRate }) =>
    v1<Domain>('PATCH', projectId, domainPath(id), { body }),
  remove: (projectId: string, id: string) => v1<null>('DELETE', projectId, domainPath(id)),
};

/** GET /v1/me as the SMTP and inbound screens read it: where to submit mail and where to receive it. */
export interface SendingStatus extends AccountStatus {
  inbound: { domain: string; address: string };
  smtp: { host: string; port: number; tls_port: number | null };
}

export const WEBHOOK_EVENTS = [
  'email.sent',
  'email.delivered',
  'email.deferred',
  'email.bounced',
  'email.complained',
  'email.failed',
  'email.suppressed',
  'email.opened',
  'email.clicked',
  'email.unsubscribed',
  'email.received',
  'contact.created',
  'contact.updated',
  'contact.deleted',
  'contact.unsubscribed',
  'domain.verified',
  'domain.failed',
] as const;

export interface Webhook {
  id: string;
  object: 'webhook';
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
  /** whsec_…: only in the answers that create the endpoint or rotate its secret. */
  secret?: string;
}

export interface WebhookDelivery {
  id: string;
  object: 'webhook_delivery';
  webhook_id: string;
  message_id: string;
  event_type: string;
  attempt: number;
  status: 'pending' | 'succeeded' | 'failed';
  status_code: number | null;
  latency_ms: number | null;
  response_excerpt: string | null;
  error: string | null;
  next_retry_at: string | null;
  created_at: string;
}

export const DELIVERIES_PER_PAGE = 25;

export const webhooksQuery = (projectId: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'webhooks'],
    queryFn: () => v1<{ data: Webhook[] }>('GET', projectId, '/webhooks'),
  });

const webhookPath = (id: string) => `/webhooks/${encodeURIComponent(id)}`;

export const webhookQuery = (projectId: string, id: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'webhook', id],
    queryFn: () => v1<Webhook>('GET', projectId, webhookPath(id)),
  });

export const deliveriesQuery = (projectId: string, id: string, page: number) =>
  queryOptions({
    queryKey: ['project', projectId, 'webhook', id, 'deliveries', page],
    queryFn: () =>
      v1<Page<WebhookDelivery>>('GET', projectId, `${webhookPath(id)}/deliveries`, {
        query: { limit: DELIVERIES_PER_PAGE, offset: (page - 1) * DELIVERIES_PER_PAGE },
      }),
  });

export interface NewWebhook {
  url: string;
  events: string[];
  description?: string | null;
}

export const webhooks = {
  create: (projectId: string, body: NewWebhook) => v1<Webhook>('POST', projectId, '/webhooks', { body }),
  update: (projectId: string, id: string, body: Partial<NewWebhook> & { enabled?: boolean }) =>
    v1<Webhook>('PATCH', projectId, webhookPath(id), { body }),
  remove: (projectId: string, id: string) => v1<null>('DELETE', projectId, webhookPath(id)),
  rotateSecret: (projectId: string, id: string) =>
    v1<Webhook>('POST', projectId, `${webhookPath(id)}/secret/rotate`),
  sendTest: (projectId: string, id: string) =>
    v1<WebhookDelivery>('POST', projectId, `${webhookPath(id)}/test`),
  retry: (projectId: string, id: string, deliveryId: string) =>
    v1<WebhookDelivery>(
      'POST',
      projectId,
      `${webhookPath(id)}/deliveries/${encodeURIComponent(deliveryId)}/retry`,
    ),
};

export const SUPPRESSION_REASONS = ['hard_bounce', 'complaint', 'unsubscribe', 'manual'] as const;
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number];

export interface Suppression {
  object: 'suppression';
  email: string;
  reason: SuppressionReason;
  source_email_id: string | null;
  detail: string | null;
  created_at: string;
}

export const SUPPRESSIONS_PER_PAGE = 50;

export const suppressionsQuery = (projectId: string, f: { reason?: string; page: number }) =>
  queryOptions({
    queryKey: ['project', projectId, 'suppressions', f],
    queryFn: () =>
      v1<Page<Suppression>>('GET', projectId, '/suppressions', {
        query: {
          reason: f.reason,
          limit: SUPPRESSIONS_PER_PAGE,
          offset: (f.page - 1) * SUPPRESSIONS_PER_PAGE,
        },
      }),
  });

export const suppressions = {
  add: (projectId: string, body: { email: string; reason: 'manual' | 'unsubscribe' }) =>
    v1<Suppression>('POST', projectId, '/suppressions', { body }),
  remove: (projectId: string, email: string) =>
    v1<null>('DELETE', projectId, `/suppressions/${encodeURIComponent(email)}`),
};

export interface InboundAttachment {
  position: number;
  filename: string | null;
  content_type: string;
  content_id: string | null;
  disposition: string | null;
  size: number;
  checksum: string;
}

export interface InboundSummary {
  id: string;
  object: 'inbound_email';
  from: string | null;
  from_address: string | null;
  to: string[];
  cc: string[];
  reply_to: string[];
  subject: string | null;
  message_id: string | null;
  envelope: { mail_from: string | null; rcpt_to: string[]; remote_ip: string | null; helo: string | null };
  attachments: InboundAttachment[];
  auth: {
    spf: string;
    dkim: { domain: string | null; selector: string | null; result: string }[];
    dmarc: string;
    dmarc_policy: string | null;
    arc: string;
    authentication_results: string;
  };
  spam: { flagged: boolean; reasons: string[] };
  size_bytes: number;
  sent_at: string | null;
  created_at: string;
}

export interface InboundEmail extends InboundSummary {
  headers: { name: string; value: string }[];
  text: string | null;
  html: string | null;
}

export const INBOUND_PER_PAGE = 25;

export const inboundListQuery = (projectId: string, f: { from?: string; page: number }) =>
  queryOptions({
    queryKey: ['project', projectId, 'inbound', f],
    queryFn: () =>
      v1<Page<InboundSummary>>('GET', projectId, '/inbound', {
        query: { from: f.from, limit: INBOUND_PER_PAGE, offset: (f.page - 1) * INBOUND_PER_PAGE },
      }),
  });

const inboundPath = (id: string) => `/inbound/${encodeURIComponent(id)}`;

export const inboundQuery = (projectId: string, id: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'inbound-email', id],
    queryFn: () => v1<InboundEmail>('GET', projectId, inboundPath(id)),
  });

export const inboundRawQuery = (projectId: string, id: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'inbound-email', id, 'raw'],
    queryFn: () => v1<string>('GET', projectId, `${inboundPath(id)}/raw`),
    staleTime: Number.POSITIVE_INFINITY,
  });

/**
 * An attachment's bytes (GET /v1/inbound/{id}/attachments/{position}) as a Blob: a plain link
 * cannot send the `X-Project-Id` header, so the screen fetches it and offers the Blob as a file.
 */
export async function inboundAttachmentBlob(projectId: string, id: string, position: number): Promise<Blob> {
  let res: Response;
  try {
    res = await fetch(`/v1${inboundPath(id)}/attachments/${position}`, {
      headers: { 'x-project-id': projectId },
      credentials: 'same-origin',
    });
  } catch {
    throw new ApiError(0, 'The server cannot be reached. Check your connection and try again.', null);
  }
  if (!res.ok) {
    const body = await res.json().catch(() => null);
    const message = typeof body?.error === 'string' ? body.error : `The download failed (${res.status}).`;
    throw new ApiError(res.status, message, body);
  }
  return res.blob();
}
