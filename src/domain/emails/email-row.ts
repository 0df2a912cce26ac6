import { randomUUID } from 'node:crypto';
import type { EmailStatus, TemplateData } from '../../db/schema.ts';
import { domainOf, formatMailbox, type Mailbox } from '../../mail/address.ts';
import type { Stream } from '../plans/project-facts.ts';
import { TEST_MESSAGE_HEADER } from './marketing-layer.ts';
import type { EmailRowInput } from './write.ts';

// The one place an outgoing email's row is made, whatever sends it (API, batch, SMTP, campaign
// batch, campaign test, flow step): it alone decides the Message-ID, the headers and the tags.

export interface Tag {
  name: string;
  value: string;
}

/** What a campaign gives each of its messages: its own tags and its tracking. */
export interface CampaignOfEmail {
  id: string;
  tags: Tag[];
  track_opens: boolean;
  track_clicks: boolean;
}

/** Who sends the message, which decides its stream, tags, headers and tracking. */
export type EmailOrigin =
  /** A request through a door (API, batch, SMTP): the caller's tags and headers, its domain's tracking. */
  | {
      kind: 'request';
      stream: Stream;
      apiKeyId: string | null;
      tags: Tag[];
      headers: Record<string, string>;
      /** The sending domain's `open_tracking` and `click_tracking` (none when not given). */
      tracking?: { opens: boolean; clicks: boolean };
      /** A door's own trace header for the message (SMTP submission's `Received`). */
      traceHeader?: (emailId: string) => string;
    }
  /** One recipient's message of a campaign (of an A/B variant's, named by its variation). */
  | { kind: 'campaign'; campaign: CampaignOfEmail; variation: string | null; contactId: string }
  /** A campaign's test message: marked as a test, without the campaign's tags or id (no stats). */
  | { kind: 'campaign_test'; campaign: CampaignOfEmail; contactId: string | null }
  /** A flow's send step, for one enrollment's contact. */
  | { kind: 'flow'; flowId: string; stepId: string; contactId: string };

/** The message itself: subject and body, or a template's version and data rendered again when it leaves. */
export interface EmailBody {
  subject: string;
  html: string | null;
  text: string | null;
  sizeBytes: number;
  template: { id: string; version: number; data: TemplateData } | null;
}

export interface EmailSpec {
  projectId: string;
  origin: EmailOrigin;
  status?: EmailStatus;
  from: Mailbox;
  to: Mailbox[];
  cc?: Mailbox[];
  bcc?: Mailbox[];
  replyTo?: Mailbox[];
  body: EmailBody;
  attachments?: EmailRowInput['attachments'];
  scheduledAt?: Date | null;
}

/** A bare address as a mailbox (no display name). */
export const mailboxOf = (address: string): Mailbox => ({ name: '', address });

/**
 * The body of a marketing or automation message rendered for its recipient: a template email keeps
 * its version and data (and is rendered again when it leaves), inline HTML is kept as rendered.
 */
export function renderedBody(
  rendered: { subject: string; html: string },
  template: { id: string; version: number } | null,
  data: TemplateData | null,
): EmailBody {
  return {
    subject: rendered.subject,
    html: template ? null : rendered.html,
    text: null,
    sizeBytes: rendered.html.length,
    template: template && data ? { id: template.id, version: template.version, data } : null,
  };
}

/** A campaign's tags on its messages: its own, then `campaign` and the A/B `variation` (ours win). */
function campaignTags(campaign: CampaignOfEmail, variation: string | null): Tag[] {
  const ours = [{ name: 'campaign', value: campaign.id }];
  if (variation !== null) ours.push({ name: 'variation', value: variation });
  return [...campaign.tags.filter((t) => t.name !== 'campaign' && t.name !== 'variation'), ...ours];
}

type OriginColumn =
  | 'api_key_id'
  | 'stream'
  | 'headers'
  | 'tags'
  | 'contact_id'
  | 'campaign_id'
  | 'track_opens'
  | 'track_clicks'
  | 'flow_id'
  | 'flow_step';

/** The stream, tags, headers, tracking and links that the origin gives a message. */
function originColumns(origin: EmailOrigin, id: string): Pick<EmailRowInput, OriginColumn> {
  switch (origin.kind) {
    case 'request':
      return {
        api_key_id: origin.apiKeyId,
        stream: origin.stream,
        headers: origin.traceHeader
          ? { Received: origin.traceHeader(id), ...origin.headers }
          : origin.headers,
        tags: origin.tags,
        contact_id: null,
        campaign_id: null,
        track_opens: origin.tracking?.opens ?? false,
        track_clicks: origin.tracking?.clicks ?? false,
      };
    case 'campaign':
      return {
        api_key_id: null,
        stream: 'marketing',
        headers: {},
        tags: campaignTags(origin.campaign, origin.variation),
        contact_id: origin.contactId,
        campaign_id: origin.campaign.id,
        track_opens: origin.campaign.track_opens,
        track_clicks: origin.campaign.track_clicks,
      };
    case 'campaign_test':
      return {
        api_key_id: null,
        stream: 'marketing',
        headers: { [TEST_MESSAGE_HEADER]: 'campaign' },
        // the campaign's own tags would count tests in the sender's tag reports
        tags: [],
        contact_id: origin.contactId,
        campaign_id: null,
        track_opens: origin.campaign.track_opens,
        track_clicks: origin.campaign.track_clicks,
      };
    case 'flow':
      return {
        api_key_id: null,
        stream: 'automation',
        headers: {},
        tags: [
          { name: 'flow', value: origin.flowId },
          { name: 'step', value: origin.stepId },
        ],
        contact_id: origin.contactId,
        campaign_id: null,
        track_opens: true,
        track_clicks: true,
        flow_id: origin.flowId,
        flow_step: origin.stepId,
      };
  }
}

/** An outgoing email's row, with a new id and its Message-ID `<id@from domain>` (kept on every retry). */
/**
 * The one way Posthorn makes an outgoing Message-ID: the email's id at the sender's domain, fixed
 * when the message is accepted, so every retry and every route carries the same one.
 */
export function messageIdOf(id: string, fromAddress: string): string {
  return `<${id}@${domainOf(fromAddress)}>`;
}

export function emailRow(spec: EmailSpec): EmailRowInput {
  const id = randomUUID();
  const { body } = spec;
  const origin = originColumns(spec.origin, id);
  // one object literal with every column, in one order: rows of one shape are written to JSON
  // fastest (a spread would build each row property by property)
  return {
    id,
    project_id: spec.projectId,
    status: spec.status ?? 'queued',
    message_id: messageIdOf(id, spec.from.address),
    from_header: formatMailbox(spec.from),
    from_address: spec.from.address,
    to_addresses: spec.to.map(formatMailbox),
    cc_addresses: (spec.cc ?? []).map(formatMailbox),
    bcc_addresses: (spec.bcc ?? []).map(formatMailbox),
    // To, Cc and Bcc as the emails log's recipient filter compares them (emails_recipients index)
    recipients: [...spec.to, ...(spec.cc ?? []), ...(spec.bcc ?? [])].map((m) => m.address.toLowerCase()),
    reply_to: (spec.replyTo ?? []).map(formatMailbox),
    subject: body.subject,
    html: body.html,
    text_body: body.text,
    attachments: spec.attachments ?? [],
    scheduled_at: spec.scheduledAt ?? null,
    size_bytes: body.sizeBytes,
    template_id: body.template?.id ?? null,
    template_version: body.template?.version ?? null,
    template_data: body.template?.data ?? null,
    api_key_id: origin.api_key_id,
    stream: origin.stream,
    headers: origin.headers,
    tags: origin.tags,
    contact_id: origin.contact_id,
    campaign_id: origin.campaign_id,
    track_opens: origin.track_opens,
    track_clicks: origin.track_clicks,
    flow_id: origin.flow_id ?? null,
    flow_step: origin.flow_step ?? null,
  };
}
