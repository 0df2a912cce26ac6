import { asSent, FROM_RESEND, TO_RESEND } from '../../domain/webhooks/resend-dialect.ts';

/**
 * Posthorn's resources as Resend's API shows them (issue 35): the same rows, in Resend's fields
 * and names. Nothing is stored twice; each function takes what the domain already presents.
 */

/**
 * The object without its null fields: Resend leaves out what a resource does not have (its
 * description types most fields as strings, not nullable), where Posthorn says null.
 */
export function compact<T extends Record<string, unknown>>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null)) as Partial<T>;
}

/** Resend's `last_event` for a message's latest event or, without one, its status. */
const LAST_EVENT: Record<string, string> = {
  scheduled: 'scheduled',
  queued: 'queued',
  sending: 'queued',
  sent: 'sent',
  delivered: 'delivered',
  deferred: 'delivery_delayed',
  bounced: 'bounced',
  complained: 'complained',
  failed: 'failed',
  suppressed: 'suppressed',
  cancelled: 'canceled',
  opened: 'opened',
  clicked: 'clicked',
};

export function lastEvent(status: string, events: { type: string }[] = []): string {
  for (let i = events.length - 1; i >= 0; i--) {
    const mapped = LAST_EVENT[events[i].type];
    if (mapped) return mapped;
  }
  return LAST_EVENT[status] ?? 'queued';
}

interface EmailLike {
  id: string;
  message_id: string;
  from: string;
  to: string[];
  cc: string[];
  bcc: string[];
  reply_to: string[];
  subject: string;
  status: string;
  tags: { name: string; value: string }[];
  scheduled_at: string | null;
  created_at: string;
  html?: string | null;
  text?: string | null;
  events?: { type: string }[];
}

export function resendEmail(e: EmailLike) {
  const email = compact({
    object: 'email',
    id: e.id,
    message_id: e.message_id,
    to: e.to,
    from: asSent(e.from),
    created_at: e.created_at,
    subject: e.subject,
    ...(e.html ? { html: e.html } : {}),
    ...(e.text ? { text: e.text } : {}),
    bcc: e.bcc,
    cc: e.cc,
    reply_to: e.reply_to,
    last_event: lastEvent(e.status, e.events),
    tags: e.tags,
  });
  // Resend's emails.get says `scheduled_at: null` for a message that was not scheduled
  return { ...email, scheduled_at: e.scheduled_at };
}

interface DomainLike {
  id: string;
  name: string;
  status: string;
  created_at: string;
  inbound_enabled: boolean;
  open_tracking: boolean;
  click_tracking: boolean;
  records: { type: string; name: string; value: string; priority?: number; status: string }[];
}

/** Which of Resend's records a Posthorn record is (the return path's MX is Resend's "SPF" MX). */
function recordKind(r: DomainLike['records'][number], domain: string): string | null {
  if (/\._domainkey\./.test(r.name)) return 'DKIM';
  if (r.type === 'TXT' && r.value.startsWith('v=spf1')) return 'SPF';
  if (r.type === 'MX') return r.name === domain ? 'Receiving' : 'SPF';
  return null;
}

const RECORD_STATUS: Record<string, string> = { pending: 'pending', verified: 'verified' };

export function resendDomain(d: DomainLike) {
  return {
    object: 'domain',
    id: d.id,
    name: d.name,
    status: d.status,
    created_at: d.created_at,
    open_tracking: d.open_tracking,
    click_tracking: d.click_tracking,
    capabilities: { sending: 'enabled', receiving: d.inbound_enabled ? 'enabled' : 'disabled' },
    records: d.records.flatMap((r) => {
      const record = recordKind(r, d.name);
      if (!record) return [];
      return [
        {
          record,
          name: r.name,
          type: r.type,
          ttl: 'Auto',
          status: RECORD_STATUS[r.status] ?? 'failed',
          value: r.value,
          ...(r.priority !== undefined ? { priority: r.priority } : {}),
        },
      ];
    }),
  };
}

/** Resend's events Posthorn does not announce, with what it announces instead. */
export const UNSUPPORTED_EVENTS: Record<string, string> = {
  'email.scheduled': 'a scheduled email is announced by email.sent when it leaves',
  'domain.created': 'a domain is announced once verified, by domain.updated',
  'domain.deleted': 'removing a domain is not announced',
};

export function posthornEvents(events: string[]): string[] {
  return [...new Set(events.flatMap((e) => FROM_RESEND[e] ?? [e]))];
}

export function resendEvents(events: string[]): string[] {
  return [...new Set(events.map((e) => TO_RESEND[e] ?? e))];
}
