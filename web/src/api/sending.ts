import { api, projectQuery, type Schemas, send } from './client.ts';
import { pageOf } from './endpoints.ts';

/**
 * The sending screens' calls, all on `/v1`: sending domains, webhooks and their deliveries,
 * suppressions and inbound mail.
 */

export type SendingRate = Schemas['SendingRate'];
export type DnsRecord = Schemas['DnsRecord'];
export type Domain = Schemas['Domain'];
export type Webhook = Schemas['Webhook'];
export type WebhookDelivery = Schemas['WebhookDelivery'];
export type Suppression = Schemas['Suppression'];
export type InboundAttachment = Schemas['InboundAttachment'];
export type InboundSummary = Schemas['InboundEmailSummary'];
export type InboundEmail = Schemas['InboundEmail'];

export const domainsQuery = (project: string) =>
  projectQuery(project, ['domains'], () => api.get('/v1/domains', { project }));

export const domainQuery = (project: string, id: string) =>
  projectQuery(project, ['domain', id], () => api.get('/v1/domains/{id}', { project, path: { id } }));

export const domains = {
  add: (project: string, domain: string) => api.post('/v1/domains', { project, body: { domain } }),
  check: (project: string, id: string) => api.post('/v1/domains/{id}/check', { project, path: { id } }),
  update: (project: string, id: string, body: Schemas['UpdateDomainRequest']) =>
    api.patch('/v1/domains/{id}', { project, path: { id }, body }),
  remove: (project: string, id: string) => api.delete('/v1/domains/{id}', { project, path: { id } }),
};

export type WebhookEvent = Schemas['CreateWebhookRequest']['events'][number];

/** Every event an endpoint can take, in the order the form lists them. */
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
  'breaker.tripped',
  'dmarc.unknown_source',
  'dmarc.alignment_dropped',
] as const satisfies readonly WebhookEvent[];
// an event the API adds and the form does not list fails the typecheck here
const everyEvent: Exclude<WebhookEvent, (typeof WEBHOOK_EVENTS)[number]>[] = [];
void everyEvent;

/** What the new-webhook form ticks at first: the delivery of each email, its bounces and complaints. */
export const DEFAULT_WEBHOOK_EVENTS: WebhookEvent[] = [
  'email.sent',
  'email.delivered',
  'email.bounced',
  'email.complained',
];

export const DELIVERIES_PER_PAGE = 25;

/** Where this server lets an endpoint point (a local server: this machine over http too). */
export const webhookUrlRulesQuery = (project: string) =>
  projectQuery(project, ['webhook-url-rules'], () => api.get('/v1/webhooks/url-rules', { project }), {
    staleTime: Number.POSITIVE_INFINITY,
  });

export const webhooksQuery = (project: string) =>
  projectQuery(project, ['webhooks'], () => api.get('/v1/webhooks', { project }));

export const webhookQuery = (project: string, id: string) =>
  projectQuery(project, ['webhook', id], () => api.get('/v1/webhooks/{id}', { project, path: { id } }));

export const deliveriesQuery = (project: string, id: string, page: number) =>
  projectQuery(project, ['webhook', id, 'deliveries', page], () =>
    api.get('/v1/webhooks/{id}/deliveries', {
      project,
      path: { id },
      query: pageOf(page, DELIVERIES_PER_PAGE),
    }),
  );

export const webhooks = {
  create: (project: string, body: Schemas['CreateWebhookRequest']) =>
    api.post('/v1/webhooks', { project, body }),
  update: (project: string, id: string, body: Schemas['UpdateWebhookRequest']) =>
    api.patch('/v1/webhooks/{id}', { project, path: { id }, body }),
  remove: (project: string, id: string) => api.delete('/v1/webhooks/{id}', { project, path: { id } }),
  rotateSecret: (project: string, id: string) =>
    api.post('/v1/webhooks/{id}/secret/rotate', { project, path: { id } }),
  sendTest: (project: string, id: string) => api.post('/v1/webhooks/{id}/test', { project, path: { id } }),
  retry: (project: string, id: string, deliveryId: string) =>
    api.post('/v1/webhooks/{id}/deliveries/{delivery_id}/retry', {
      project,
      path: { id, delivery_id: deliveryId },
    }),
};

export type SuppressionReason = Suppression['reason'];
export const SUPPRESSION_REASONS: SuppressionReason[] = ['hard_bounce', 'complaint', 'unsubscribe', 'manual'];

export const SUPPRESSIONS_PER_PAGE = 50;

export const suppressionsQuery = (project: string, f: { reason?: SuppressionReason; page: number }) =>
  projectQuery(project, ['suppressions', f], () =>
    api.get('/v1/suppressions', {
      project,
      query: { reason: f.reason, ...pageOf(f.page, SUPPRESSIONS_PER_PAGE) },
    }),
  );

export const suppressions = {
  add: (project: string, body: Schemas['CreateSuppressionRequest']) =>
    api.post('/v1/suppressions', { project, body }),
  remove: (project: string, email: string) =>
    api.delete('/v1/suppressions/{email}', { project, path: { email } }),
};

export const INBOUND_PER_PAGE = 25;

export const inboundListQuery = (project: string, f: { from?: string; page: number }) =>
  projectQuery(project, ['inbound', f], () =>
    api.get('/v1/inbound', { project, query: { from: f.from, ...pageOf(f.page, INBOUND_PER_PAGE) } }),
  );

export const inboundQuery = (project: string, id: string) =>
  projectQuery(project, ['inbound-email', id], () => api.get('/v1/inbound/{id}', { project, path: { id } }));

export const inboundRawQuery = (project: string, id: string) =>
  projectQuery(
    project,
    ['inbound-email', id, 'raw'],
    () => api.get('/v1/inbound/{id}/raw', { project, path: { id } }),
    { staleTime: Number.POSITIVE_INFINITY },
  );

/**
 * An attachment's bytes (GET /v1/inbound/{id}/attachments/{position}) as a Blob: a plain link
 * cannot send the `X-Project-Id` header, so the screen fetches it and offers the Blob as a file.
 */
export async function inboundAttachmentBlob(project: string, id: string, position: number): Promise<Blob> {
  const res = await send('GET', `/v1/inbound/${encodeURIComponent(id)}/attachments/${position}`, {
    project,
    what: 'download',
  });
  return res.blob();
}

/** What a domain's DMARC aggregate and TLS reports say (GET /v1/domains/{id}/dmarc). */
export const domainDmarcQuery = (project: string, id: string) =>
  projectQuery(project, ['domain', id, 'dmarc'], () =>
    api.get('/v1/domains/{id}/dmarc', { project, path: { id } }),
  );
export type DomainDmarc = Schemas['DomainDmarc'];

/** Naming the sources that send as a domain (PUT and DELETE /v1/domains/{id}/dmarc/labels). */
export const dmarcLabels = {
  put: (project: string, id: string, body: { source: string; label: string }) =>
    api.put('/v1/domains/{id}/dmarc/labels', { project, path: { id }, body }),
  remove: (project: string, id: string, labelId: string) =>
    api.delete('/v1/domains/{id}/dmarc/labels/{label_id}', { project, path: { id, label_id: labelId } }),
};
