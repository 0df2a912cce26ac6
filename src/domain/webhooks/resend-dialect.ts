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

/** A display name that needs no quotes: no RFC 5322 specials but the period (`J. Smith`). */
const BARE_NAME = /^[^"\\<>()[\]:;@,\s](?:[^"\\<>()[\]:;@,]*[^"\\<>()[\]:;@,\s])?$/;

/**
 * A stored mailbox as a Resend user wrote it: Posthorn stores `"Door" <hello@door.example>`,
 * quoting every name; a name that needs no quotes is shown bare (`Door <hello@door.example>`).
 */
export function asSent(mailbox: unknown): unknown {
  if (typeof mailbox !== 'string') return mailbox;
  const quoted = /^("(?:[^"\\]|\\.)*") <([^<>]+)>$/.exec(mailbox);
  if (!quoted) return mailbox;
  let name: string;
  try {
    name = JSON.parse(quoted[1]);
  } catch {
    return mailbox;
  }
  return BARE_NAME.test(name) ? `${name} <${quoted[2]}>` : mailbox;
}

function emailData(d: Data) {
  const event = (d.event ?? {}) as Data;
  const tags = Array.isArray(d.tags) ? (d.tags as { name: string; value: string }[]) : [];
  return {
    email_id: d.id,
    created_at: d.created_at,
    from: asSent(d.from),
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

/**
 * Whether Posthorn's event is an answer of the hop a message was handed to, recorded at the
 * hand-over itself (the dev mailbox, the simulator, a direct MX, a relay refusing at once): no
 * `sent` event came before it. A report or a provider's notice names its `source` (`ses`, `dsn`,
 * `arf`) and follows a `sent` event of its own.
 */
function answeredAtHandOver(type: string, data: Data): boolean {
  if (type !== 'email.delivered' && type !== 'email.bounced') return false;
  const event = (data.event ?? {}) as Data;
  return event.source === undefined && 'from' in data;
}

/**
 * What a Resend receiver is sent for one of Posthorn's events, each with the Posthorn event an
 * endpoint subscribes to for it: the event in Resend's dialect, after an `email.sent` when the
 * message was handed over and answered at once (Resend announces every accepted message handed
 * over, then what became of it).
 */
export function resendDeliveries(type: string, data: Data) {
  const sent = answeredAtHandOver(type, data)
    ? [
        {
          subscription: 'email.sent',
          ...inResendDialect('email.sent', { ...data, event: { ...(data.event as Data), type: 'sent' } }),
        },
      ]
    : [];
  return [...sent, { subscription: type, ...inResendDialect(type, data) }];
}

/**
 * Svix's names for the Standard Webhooks headers, beside them and with the same values: Resend
 * (through Svix) sends `svix-id`, `svix-timestamp` and `svix-signature`, and its users' receivers
 * read those; the signature is the same, so either verifier accepts the delivery.
 */
export function withSvixHeaders(headers: Record<string, string>): Record<string, string> {
  return {
    ...headers,
    'svix-id': headers['webhook-id'],
    'svix-timestamp': headers['webhook-timestamp'],
    'svix-signature': headers['webhook-signature'],
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
