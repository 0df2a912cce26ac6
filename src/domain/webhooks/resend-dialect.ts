/**
 * Webhook events as Resend writes them (issue 35), for endpoints made through the
 * Resend-compatible door: its event names (email.delivery_delayed, domain.updated) and its data
 * (an email event's `email_id`, `from`, `to`, `subject`, `tags`; a contact's `unsubscribed`).
 * Events Resend does not have keep Posthorn's name and data.
 */

export const TO_RESEND: Record<string, string> = {
  'email.deferred': 'email.delivery_delayed',
  'domain.verified': 'domain.updated',
  'domain.failed': 'domain.updated',
};

export const FROM_RESEND: Record<string, string[]> = {
  'email.delivery_delayed': ['email.deferred'],
  'domain.updated': ['domain.verified', 'domain.failed'],
};

type Data = Record<string, unknown>;

function emailData(d: Data) {
  const event = (d.event ?? {}) as Data;
  const tags = Array.isArray(d.tags) ? (d.tags as { name: string; value: string }[]) : [];
  return {
    email_id: d.id,
    created_at: d.created_at,
    from: d.from,
    to: d.to,
    subject: d.subject,
    ...(d.campaign_id ? { broadcast_id: d.campaign_id } : {}),
    ...(tags.length ? { tags: Object.fromEntries(tags.map((t) => [t.name, t.value])) } : {}),
    ...(event.type === 'clicked' && typeof event.url === 'string'
      ? {
          click: {
            link: event.url,
            timestamp: d.updated_at,
            // Posthorn keeps no reader's address or browser, only its class
            ipAddress: '',
            userAgent: String(event.user_agent_class ?? ''),
          },
        }
      : {}),
    ...(event.type === 'bounced'
      ? {
          bounce: {
            message: String(event.response ?? 'bounced'),
            type: 'Permanent',
            subType: 'General',
            diagnosticCode: event.response ? [String(event.response)] : [],
          },
        }
      : {}),
  };
}

function contactData(d: Data) {
  return {
    id: d.id,
    email: d.email,
    ...(d.first_name ? { first_name: d.first_name } : {}),
    ...(d.last_name ? { last_name: d.last_name } : {}),
    unsubscribed: d.subscribed === false,
    segment_ids: Array.isArray(d.lists) ? d.lists : [],
    created_at: d.created_at ?? new Date().toISOString(),
    updated_at: d.updated_at ?? d.created_at ?? new Date().toISOString(),
  };
}

/** An event's type and data as a Resend receiver reads them. */
export function inResendDialect(type: string, data: Data): { type: string; data: Data } {
  const named = TO_RESEND[type] ?? type;
  if (type.startsWith('email.') && type !== 'email.received' && 'from' in data)
    return { type: named, data: emailData(data) };
  if (type.startsWith('contact.') && !data.deleted) return { type: named, data: contactData(data) };
  return { type: named, data };
}
