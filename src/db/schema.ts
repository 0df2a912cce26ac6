import type { ColumnType, Generated } from 'kysely';

/** Row types of the tables in migrations/, for Kysely. */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export type Role = 'owner' | 'admin' | 'member';
export type KeyScope = 'project' | 'all_access';

export interface AccountsTable {
  id: Generated<string>;
  email: string;
  name: string;
  email_confirmed_at: NullableTimestamp;
  terms_accepted_at: Timestamp;
  /** scrypt$N$r$p$salt$hash; null until a password is set. */
  password_hash: string | null;
  created_at: Generated<Date>;
}

export interface WorkspacesTable {
  id: Generated<string>;
  name: string;
  plan: Generated<string>;
  owner_account_id: string;
  created_at: Generated<Date>;
}

export interface WorkspaceMembersTable {
  workspace_id: string;
  account_id: string;
  role: Role;
  created_at: Generated<Date>;
}

export interface ProjectsTable {
  id: Generated<string>;
  workspace_id: string;
  name: string;
  footer_address: string | null;
  inbound_slug: Generated<string>;
  rate_per_second: number | null;
  rate_per_hour: number | null;
  /** The zone of contacts whose properties name none (migration 0053). */
  time_zone: Generated<string>;
  /** Quiet hours for marketing and automation, minutes after midnight local; both null: none. */
  quiet_from: number | null;
  quiet_to: number | null;
  created_at: Generated<Date>;
}

export interface ProjectMembersTable {
  project_id: string;
  account_id: string;
  role: Role;
  created_at: Generated<Date>;
}

export interface ApiKeysTable {
  id: Generated<string>;
  key_id: string;
  account_id: string;
  project_id: string | null;
  scope: KeyScope;
  name: string;
  secret_hash: Buffer;
  expires_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
  last_used_at: NullableTimestamp;
  rotated_at: NullableTimestamp;
  /** The account that made the key (null once that account is deleted); migration 0027. */
  created_by: string | null;
  created_at: Generated<Date>;
}

export interface EmailCodesTable {
  id: Generated<string>;
  account_id: string;
  purpose: 'verify_email' | 'login';
  code_hash: Buffer;
  attempts: Generated<number>;
  expires_at: Timestamp;
  consumed_at: NullableTimestamp;
  created_at: Generated<Date>;
}

export interface DashboardSessionsTable {
  id: Generated<string>;
  account_id: string;
  token_hash: Buffer;
  expires_at: Timestamp;
  user_agent: string | null;
  ip: string | null;
  last_used_at: Generated<Date>;
  created_at: Generated<Date>;
}

export interface PasswordResetsTable {
  id: Generated<string>;
  account_id: string;
  token_hash: Buffer;
  expires_at: Timestamp;
  used_at: NullableTimestamp;
  created_at: Generated<Date>;
}

export interface LoginFailuresTable {
  id: Generated<number>;
  email: string;
  ip: string;
  created_at: Generated<Date>;
}

export interface InvitationsTable {
  id: Generated<string>;
  project_id: string;
  email: string;
  role: Role;
  token_hash: Buffer;
  invited_by: string | null;
  expires_at: Timestamp;
  accepted_at: NullableTimestamp;
  accepted_by: string | null;
  created_at: Generated<Date>;
}

export interface RequestLogsTable {
  id: Generated<number>;
  api_key_id: string;
  key_name: string;
  project_id: string | null;
  method: string;
  path: string;
  status: number;
  latency_ms: number;
  created_at: Timestamp;
}

export interface SystemEmailsTable {
  id: Generated<string>;
  message_id: string;
  to_address: string;
  subject: string;
  /** The message as composed, unsigned (it is signed when it leaves); cleared once it is sent. */
  raw: Buffer | null;
  status: Generated<SystemEmailStatus>;
  /** The last refusal or bounce (the relay's reply, or the DSN's diagnostic). */
  last_error: string | null;
  /** The provider's id for the message (Amazon SES's MessageId), which its feedback names. */
  provider_message_id: Generated<string | null>;
  attempts: Generated<number>;
  next_attempt_at: NullableTimestamp;
  sent_at: NullableTimestamp;
  created_at: Generated<Date>;
}

export type SystemEmailStatus = 'queued' | 'deferred' | 'sent' | 'bounced' | 'complained' | 'failed';

/** One worker process's view of one route (migration 0031). */
export interface RouteStatusTable {
  route: string;
  node: string;
  healthy: boolean;
  failures: number;
  ambiguous: ColumnType<number, number, number>;
  taken: ColumnType<number, number, number>;
  not_taken: ColumnType<number, number, number>;
  last_error: string | null;
  changed_at: Date | null;
  started_at: Date;
  updated_at: Generated<Date>;
}

/** What a campaign's or flow's mail met, for the circuit breaker (migration 0033). */
export interface BreakerCountsTable {
  scope: 'campaign' | 'flow' | 'domain' | 'project';
  key: string;
  project_id: string;
  sent: ColumnType<number, number | undefined, number>;
  hard_bounced: ColumnType<number, number | undefined, number>;
  complained: ColumnType<number, number | undefined, number>;
  /** When the counts' current window began (domains and projects: windows of 7 days, migration 0036). */
  window_start: Generated<Date>;
}

/** A bulk-sender gate passed by an admin although its checks failed (migration 0034). */
export interface GateOverridesTable {
  id: Generated<string>;
  project_id: string;
  scope: 'campaign' | 'flow';
  key: string;
  overridden_by: string;
  reason: string;
  failures: ColumnType<{ id: string; message: string }[], string, string>;
  created_at: Generated<Date>;
}

/** A threshold the breaker found crossed, and the resume that closed it (migration 0033). */
export interface BreakerTripsTable {
  id: Generated<string>;
  project_id: string;
  scope: 'campaign' | 'flow' | 'domain' | 'project';
  key: string;
  level: 'warn' | 'stop';
  metric: 'hard_bounce_rate' | 'complaint_rate';
  rate: ColumnType<string, number, number>;
  threshold: ColumnType<string, number, number>;
  messages: ColumnType<number, number, number>;
  reason: string;
  created_at: Generated<Date>;
  resumed_at: Date | null;
  resumed_by: string | null;
  resume_reason: string | null;
}

/** A large sent campaign's page, counted at most every few seconds (migration 0032). */
export interface CampaignStatsCacheTable {
  campaign_id: string;
  stats: ColumnType<unknown, string | undefined, string>;
  activity: ColumnType<unknown, string | undefined, string>;
  computed_at: ColumnType<Date, Date | undefined, Date>;
}

export interface MailboxMessagesTable {
  id: Generated<string>;
  message_id: string | null;
  envelope_from: string;
  envelope_to: string[];
  subject: string | null;
  raw: Buffer;
  created_at: Generated<Date>;
}

export interface DomainRecord {
  type: 'TXT' | 'MX';
  name: string;
  value: string;
  priority?: number;
  purpose: string;
  required: boolean;
  status: 'pending' | 'verified' | 'mismatch' | 'missing';
  found?: string[];
}

export interface DomainsTable {
  id: Generated<string>;
  project_id: string;
  name: string;
  status: Generated<'pending' | 'verified' | 'failed'>;
  verified_at: NullableTimestamp;
  dkim_selector: string | null;
  next_dkim_selector: string | null;
  return_path: Generated<string>;
  records: ColumnType<DomainRecord[], string | undefined, string>;
  last_checked_at: NullableTimestamp;
  failed_at: NullableTimestamp;
  inbound_enabled: Generated<boolean>;
  rate_per_second: number | null;
  rate_per_hour: number | null;
  /** The warm-up plan's first day (`YYYY-MM-DD`); null: no plan (migration 0035). */
  warmup_started_on: Generated<string | null>;
  /** Its daily volumes from that day; null: the default schedule. */
  warmup_schedule: Generated<number[] | null>;
  /** Transactional mail from the domain carries the open pixel / tracked links (migration 0052). */
  open_tracking: Generated<boolean>;
  click_tracking: Generated<boolean>;
  created_at: Generated<Date>;
}

/** A DMARC aggregate or SMTP TLS report received for a sending domain (migration 0038). */
export interface DmarcReportsTable {
  id: Generated<string>;
  domain_id: string;
  kind: 'aggregate' | 'tls' | 'unreadable';
  reporter: string | null;
  reporter_email: string | null;
  report_id: string | null;
  begin_at: Date | null;
  end_at: Date | null;
  policy: ColumnType<Record<string, unknown> | null, string | null, string | null>;
  total: ColumnType<number, number | undefined, number>;
  file: string | null;
  reason: string | null;
  raw: Buffer | null;
  received_at: Generated<Date>;
  /** The domain of the report mail's From, and whether the mail passed DMARC for it (migration 0046). */
  reporter_domain: string | null;
  authenticated: Generated<boolean>;
}

/** One record of an aggregate report: a source's messages and how they fared (migration 0038). */
export interface DmarcRecordsTable {
  report_id: string;
  domain_id: string;
  day: ColumnType<Date, string, string>;
  source_ip: string;
  count: ColumnType<number, number, number>;
  disposition: string | null;
  dkim: string | null;
  spf: string | null;
  aligned: boolean;
  header_from: string | null;
  envelope_from: string | null;
  auth: ColumnType<unknown, string, string>;
}

/** One policy's sessions in an SMTP TLS report (migration 0038). */
export interface TlsReportResultsTable {
  report_id: string;
  domain_id: string;
  day: ColumnType<Date, string, string>;
  policy_type: string;
  policy_domain: string;
  mx_host: string | null;
  successful: ColumnType<number, number, number>;
  failed: ColumnType<number, number, number>;
  failures: ColumnType<unknown, string, string>;
}

/** A person's label for an address or network in a domain's DMARC reports (migration 0039). */
export interface DmarcSourceLabelsTable {
  id: Generated<string>;
  domain_id: string;
  /** An address or a network (PostgreSQL's cidr: `203.0.113.7/32`, `203.0.113.0/24`). */
  source: string;
  label: string;
  created_at: Generated<Date>;
}

/** A DMARC webhook alert, once per domain, kind and key (migration 0039). */
export interface DmarcAlertsTable {
  id: Generated<string>;
  domain_id: string;
  kind: 'unknown_source' | 'alignment_dropped';
  key: string;
  detail: ColumnType<Record<string, unknown>, string, string>;
  created_at: Generated<Date>;
}

/** What a direct route's source address sent on a day of its warm-up (migration 0037). */
export interface WarmupSourceUsageTable {
  address: string;
  day: string;
  used: Generated<number>;
}

/** What a warm-up day used of its domain's volume (migration 0035). */
export interface WarmupUsageTable {
  domain_id: string;
  day: string;
  used: Generated<number>;
}

export interface ContactsTable {
  id: Generated<string>;
  project_id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  properties: ColumnType<Record<string, unknown>, string | undefined, string>;
  subscribed: Generated<boolean>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface ContactConsentsTable {
  id: Generated<number>;
  contact_id: string;
  project_id: string;
  status: 'granted' | 'withdrawn';
  source: string | null;
  ip: string | null;
  text_shown: string | null;
  /** The topic the change is about; null: the contact's subscription to all marketing. */
  topic_id: Generated<string | null>;
  created_at: Generated<Date>;
}

export interface AssetsTable {
  id: Generated<string>;
  project_id: string;
  key: string;
  preview_key: string;
  filename: string | null;
  content_type: string;
  bytes: number;
  preview_bytes: number;
  width: number;
  height: number;
  created_by: string | null;
  created_at: Generated<Date>;
}

export interface TopicsTable {
  id: Generated<string>;
  project_id: string;
  name: string;
  description: string | null;
  default_subscription: 'opt_in' | 'opt_out';
  visibility: Generated<'public' | 'private'>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface ContactTopicsTable {
  contact_id: string;
  topic_id: string;
  subscribed: boolean;
  updated_at: Generated<Date>;
}

export interface ListsTable {
  id: Generated<string>;
  project_id: string;
  name: string;
  description: string | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface ListMembersTable {
  list_id: string;
  contact_id: string;
  subscribed: Generated<boolean>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface SegmentsTable {
  id: Generated<string>;
  project_id: string;
  name: string;
  description: string | null;
  definition: ColumnType<unknown, string, string>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface EventsTable {
  id: Generated<number>;
  project_id: string;
  contact_id: string;
  name: string;
  properties: ColumnType<Record<string, unknown>, string | undefined, string>;
  value: number | null;
  currency: string | null;
  quantity: number | null;
  campaign_id: string | null;
  flow_id: string | null;
  created_at: Generated<Date>;
}

export interface AudienceOutboxTable {
  id: Generated<number>;
  event: ColumnType<Record<string, unknown>, string, never>;
  created_at: Generated<Date>;
}

export interface ImportsTable {
  id: Generated<string>;
  project_id: string;
  status: Generated<'queued' | 'running' | 'completed' | 'failed'>;
  format: 'csv' | 'json';
  source: Buffer | null;
  total: number | null;
  processed: Generated<number>;
  created: Generated<number>;
  updated: Generated<number>;
  skipped: Generated<number>;
  errors: ColumnType<{ row: number; error: string }[], string | undefined, string>;
  error_count: Generated<number>;
  failure: string | null;
  created_at: Generated<Date>;
  finished_at: Date | null;
  /** The uploaded file's name, when the client gave one. */
  filename: string | null;
  /** Who started the import: a person's address or an API key's name. */
  created_by: string | null;
  /** Column header to target (a contact field, `property:<name>` or `skip`); null: from the headers. */
  mapping: ColumnType<Record<string, string> | null, string | null | undefined, string | null>;
  list_ids: ColumnType<string[], string[] | undefined, string[]>;
  /** The topics chosen for every imported contact (migration 0055). */
  topics: ColumnType<{ id: string; subscription: 'opt_in' | 'opt_out' }[], string | undefined, string>;
}

export interface SendingUsageTable {
  project_id: string;
  shard: Generated<number>;
  day: ColumnType<Date, string, string>;
  sent: Generated<number>;
  shared_domain_sent: Generated<number>;
}

/** Every status an email can have, in the order of its life; the API's schemas enumerate these. */
export const EMAIL_STATUSES = [
  'scheduled',
  'queued',
  'sending',
  'sent',
  'delivered',
  'deferred',
  'bounced',
  'complained',
  'failed',
  'suppressed',
  'cancelled',
] as const;
export type EmailStatus = (typeof EMAIL_STATUSES)[number];

type Json<T> = ColumnType<T, string, string>;

export interface EmailsTable {
  id: string;
  project_id: string;
  api_key_id: string | null;
  stream: 'transactional' | 'marketing' | 'automation' | 'system';
  status: EmailStatus;
  message_id: string;
  from_header: string;
  from_address: string;
  to_addresses: string[];
  cc_addresses: Generated<string[]>;
  bcc_addresses: Generated<string[]>;
  /** The bare addresses of To, Cc and Bcc in lower case (the emails log's recipient filter). */
  recipients: string[] | null;
  reply_to: Generated<string[]>;
  subject: string;
  html: string | null;
  text_body: string | null;
  headers: Json<Record<string, string>>;
  tags: Json<{ name: string; value: string }[]>;
  attachments: Json<
    { filename: string | null; content_type: string | null; content_id: string | null; size: number }[]
  >;
  scheduled_at: NullableTimestamp;
  size_bytes: Generated<number>;
  attempts: Generated<number>;
  next_attempt_at: NullableTimestamp;
  last_response: string | null;
  sent_at: NullableTimestamp;
  template_id: Generated<string | null>;
  template_version: Generated<number | null>;
  template_data: ColumnType<TemplateData | null, string | null | undefined, string | null>;
  /** The contact a marketing or automation email goes to (null for transactional mail). */
  contact_id: Generated<string | null>;
  /** Marketing layer: add the open pixel / send links through click tracking (campaigns and flows). */
  track_opens: Generated<boolean>;
  track_clicks: Generated<boolean>;
  /** The campaign this email is one recipient's message of (named in Feedback-ID). */
  campaign_id: Generated<string | null>;
  flow_id: Generated<string | null>;
  flow_step: Generated<string | null>;
  /** When retention removed the bodies and attachment bytes (POSTHORN_RETENTION_MESSAGE_BODIES_DAYS). */
  body_pruned_at: NullableTimestamp;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

/** Connections one process holds open to a direct route's lane (migration 0043, domain/sending/leases.ts). */
export interface ConnectionLeasesTable {
  lane: string;
  holder: string;
  n: number;
  seen_at: Generated<Date>;
}

/** A batch of messages a delivery scheduler claimed (migration 0042, domain/sending/claim.ts). */
export interface DeliveryClaimsTable {
  claim: string;
  email_ids: string[];
  claimed_at: Generated<Date>;
}

export interface EmailAttachmentsTable {
  email_id: string;
  position: number;
  content: Buffer;
}

export interface EmailEventsTable {
  id: Generated<number>;
  email_id: string;
  project_id: string;
  type: string;
  recipient: string | null;
  detail: Json<Record<string, unknown>>;
  created_at: Generated<Date>;
}

export interface SuppressionsTable {
  project_id: string;
  email: string;
  reason: 'hard_bounce' | 'complaint' | 'unsubscribe' | 'manual';
  source_email_id: string | null;
  detail: string | null;
  created_at: Generated<Date>;
}

export interface IdempotencyKeysTable {
  project_id: string;
  key: string;
  request_hash: Buffer;
  status_code: number | null;
  response: Json<unknown> | null;
  created_at: Generated<Date>;
}

export interface DkimKeysTable {
  id: Generated<string>;
  project_id: string | null;
  domain: string;
  selector: string;
  private_key: Buffer;
  public_key: string;
  created_at: Generated<Date>;
}

export interface WorkerHeartbeatsTable {
  worker_id: string;
  seen_at: Generated<Date>;
}

export interface DomainEventsTable {
  id: Generated<number>;
  domain_id: string;
  project_id: string;
  type: string;
  detail: ColumnType<Record<string, unknown>, string, string>;
  created_at: Generated<Date>;
}

export interface InboundAttachmentMeta {
  position: number;
  filename: string | null;
  content_type: string;
  content_id: string | null;
  disposition: string | null;
  size: number;
  checksum: string;
}

export interface InboundMessagesTable {
  id: Generated<string>;
  project_id: string;
  mail_from: string | null;
  rcpt_to: string[];
  remote_ip: string | null;
  helo: string | null;
  from_header: string | null;
  from_address: string | null;
  to_addresses: string[];
  cc_addresses: string[];
  reply_to: string[];
  subject: string | null;
  message_id: string | null;
  sent_at: Date | null;
  text_body: string | null;
  html: string | null;
  headers: ColumnType<[string, string][], string, string>;
  auth: ColumnType<Record<string, unknown>, string, string>;
  spam: ColumnType<{ flagged: boolean; reasons: string[] }, string, string>;
  attachments: ColumnType<InboundAttachmentMeta[], string, string>;
  size_bytes: number;
  /** The source as received; empty once retention pruned it (`raw_pruned_at` says when). */
  raw: Buffer;
  raw_pruned_at: NullableTimestamp;
  created_at: Generated<Date>;
}

export interface InboundAttachmentsTable {
  inbound_id: string;
  position: number;
  content: Buffer;
}

export interface MailReportsTable {
  id: Generated<string>;
  project_id: string | null;
  email_id: string | null;
  kind: 'bounce' | 'complaint';
  detail: ColumnType<Record<string, unknown>, string, string>;
  created_at: Generated<Date>;
}

/** A provider's notification (SES by SNS), kept once with what it did (migration 0029). */
export interface ProviderFeedbackTable {
  id: Generated<string>;
  provider: 'ses';
  notification_id: string;
  type: string;
  kind: string | null;
  outcome: ProviderFeedbackOutcome;
  provider_message_id: string | null;
  email_id: string | null;
  system_email_id: string | null;
  project_id: string | null;
  topic_arn: string | null;
  detail: ColumnType<Record<string, unknown>, string, string>;
  created_at: Generated<Date>;
}

export type ProviderFeedbackOutcome = 'applied' | 'unmatched' | 'ignored' | 'confirmed' | 'not_confirmed';

export interface WebhookEndpointsTable {
  id: Generated<string>;
  project_id: string;
  url: string;
  events: string[];
  description: string | null;
  enabled: Generated<boolean>;
  secret_enc: Buffer;
  previous_secret_enc: Buffer | null;
  previous_expires_at: Date | null;
  failing_since: Date | null;
  disabled_reason: string | null;
  /** Posthorn's events, or Resend's names and data (migration 0040). */
  dialect: Generated<'posthorn' | 'resend'>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface WebhookDeliveriesTable {
  id: Generated<string>;
  endpoint_id: string;
  project_id: string;
  message_id: string;
  fanout_key: string | null;
  event_type: string;
  payload: ColumnType<Record<string, unknown>, string, string>;
  attempt: Generated<number>;
  status: Generated<'pending' | 'succeeded' | 'failed'>;
  status_code: number | null;
  latency_ms: number | null;
  response_excerpt: string | null;
  error: string | null;
  next_retry_at: Date | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface PairingsTable {
  id: Generated<string>;
  code: string;
  poll_token_hash: Buffer;
  device_name: string;
  status: Generated<'pending' | 'authorized' | 'denied' | 'expired'>;
  account_id: string | null;
  key_enc: Buffer | null;
  key_id: string | null;
  expires_at: Date;
  last_polled_at: Date | null;
  created_at: Generated<Date>;
}

export type TemplateVariableType = 'string' | 'number' | 'boolean' | 'date';

/** What a template email is rendered from again at delivery: resolved variables and the contact. */
export interface TemplateData {
  variables: Record<string, unknown>;
  contact: {
    email: string;
    first_name: string | null;
    last_name: string | null;
    properties: Record<string, unknown>;
  } | null;
  /** A campaign's own preheader (Liquid), replacing the version's (templates/message-checks.ts). */
  preheader?: string;
}

export interface TemplateVariable {
  name: string;
  type: TemplateVariableType;
  default?: string | number | boolean;
}

/** What a template's draft and each published version hold alike. */
interface TemplateContent {
  project_id: string;
  subject: string;
  mjml: string | null;
  html: string | null;
  text_body: string | null;
  preheader: string | null;
  from_address: string | null;
  reply_to: string | null;
  variables: Json<TemplateVariable[]>;
  compiled_html: string;
}

export interface TemplatesTable extends TemplateContent {
  id: string;
  name: string;
  latest_version: Generated<number>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface TemplateVersionsTable extends TemplateContent {
  template_id: string;
  version: number;
  published_at: Generated<Date>;
}

export type CampaignStatus = 'draft' | 'scheduled' | 'sending' | 'sent' | 'paused' | 'cancelled' | 'failed';

export interface CampaignsTable {
  id: string;
  project_id: string;
  name: string;
  status: Generated<CampaignStatus>;
  from_address: string | null;
  from_name: string | null;
  reply_to: string | null;
  subject: string | null;
  preheader: string | null;
  template_id: string | null;
  template_version: number | null;
  html: string | null;
  list_ids: Generated<string[]>;
  segment_ids: Generated<string[]>;
  exclude_list_ids: Generated<string[]>;
  exclude_segment_ids: Generated<string[]>;
  /** Only contacts subscribed to this topic get the campaign (migration 0050); null: no topic. */
  topic_id: Generated<string | null>;
  /** Minutes after midnight in each recipient's zone its message leaves at (migration 0054); null: at once. */
  local_time: Generated<number | null>;
  track_opens: Generated<boolean>;
  track_clicks: Generated<boolean>;
  tags: ColumnType<{ name: string; value: string }[], string | undefined, string>;
  scheduled_at: NullableTimestamp;
  recipient_count: number | null;
  rate_per_second: number | null;
  rate_per_hour: number | null;
  started_at: NullableTimestamp;
  finished_at: NullableTimestamp;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  failure_reason: string | null;
  /** The A/B test's settings (domain/campaigns/ab.ts `AbTest`), null for a plain campaign. */
  ab_test: ColumnType<AbTestColumn | null, string | null | undefined, string | null>;
  winner_variant: number | null;
  /** When the A/B winner is (or, picked by hand, may be) chosen: set once the test is written. */
  ab_winner_due_at: NullableTimestamp;
  /** Values for the template's variables (`variables` beside `template_id`). */
  template_variables: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  /** Why the campaign is paused when the circuit breaker paused it (null: paused by hand, or not paused). */
  paused_reason: Generated<string | null>;
}

/** A campaign's A/B test as stored (checked by domain/campaigns/ab.ts). */
export interface AbTestColumn {
  variants: {
    name: string;
    subject?: string;
    html?: string;
    template_id?: string;
    template_version?: number | null;
    /** Values for the variant's template's variables (with its `template_id`). */
    variables?: Record<string, unknown>;
    from_name?: string;
  }[];
  test_share: number;
  winner_by: 'opens' | 'clicks' | 'revenue' | 'manual';
  wait_minutes?: number;
  wait_seconds?: number;
}

/** A campaign's audience as snapshotted when sending starts: one row per contact. */
export interface CampaignRecipientsTable {
  campaign_id: string;
  contact_id: string;
  email: string;
  status: Generated<string>;
  email_id: string | null;
  /** The A/B variant a test recipient gets (an index of ab_test.variants); null: the winner's. */
  variant: number | null;
  /** Why a `failed` recipient got no message. */
  reason: Generated<string | null>;
  /** Its place in a warm-up's order: 0 engaged in the last 90 days, 1 subscribed in the last 30, 2 the rest. */
  priority: Generated<number>;
  /** When its message may be written (local time, quiet hours; migration 0054); null: at once. */
  send_after: Generated<Date | null>;
}

/** A throttle bucket (GCRA): the earliest moment its next message may leave. */
export interface SendRatesTable {
  bucket: string;
  next_at: Date;
}

export type FlowStatus = 'draft' | 'active' | 'paused' | 'archived';
export type EnrollmentStatus = 'active' | 'completed' | 'exited' | 'failed' | 'cancelled';

export interface FlowsTable {
  id: string;
  project_id: string;
  name: string;
  status: Generated<FlowStatus>;
  from_address: string | null;
  from_name: string | null;
  version: Generated<number>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  /** The account that last created, changed or activated the flow's webhook steps (null: none). */
  webhook_owner_id: string | null;
  /** Why the flow is in its status when the service put it there (paused for lost rights). */
  status_reason: string | null;
}

export interface FlowVersionsTable {
  flow_id: string;
  version: number;
  definition: ColumnType<unknown, string, string>;
  created_at: Generated<Date>;
}

/** One step an enrollment passed through, as its history shows it. */
export interface EnrollmentHistoryEntry {
  step_id: string;
  type: string;
  at: string;
  outcome: string;
  email_id?: string;
}

export interface FlowEnrollmentsTable {
  id: string;
  project_id: string;
  flow_id: string;
  version: number;
  contact_id: string;
  status: Generated<EnrollmentStatus>;
  step_id: string | null;
  wake_at: NullableTimestamp;
  waiting_for: ColumnType<unknown, string | null | undefined, string | null>;
  exit_reason: string | null;
  converted_at: NullableTimestamp;
  history: ColumnType<EnrollmentHistoryEntry[], string | undefined, string>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  finished_at: NullableTimestamp;
}

export interface FlowStepSendsTable {
  enrollment_id: string;
  step_id: string;
  email_id: string;
}

export interface Database {
  flows: FlowsTable;
  flow_versions: FlowVersionsTable;
  flow_enrollments: FlowEnrollmentsTable;
  flow_step_sends: FlowStepSendsTable;
  send_rates: SendRatesTable;
  campaigns: CampaignsTable;
  campaign_recipients: CampaignRecipientsTable;
  templates: TemplatesTable;
  template_versions: TemplateVersionsTable;
  pairings: PairingsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  contact_consents: ContactConsentsTable;
  topics: TopicsTable;
  assets: AssetsTable;
  contact_topics: ContactTopicsTable;
  lists: ListsTable;
  list_members: ListMembersTable;
  segments: SegmentsTable;
  events: EventsTable;
  imports: ImportsTable;
  audience_outbox: AudienceOutboxTable;
  inbound_messages: InboundMessagesTable;
  inbound_attachments: InboundAttachmentsTable;
  mail_reports: MailReportsTable;
  provider_feedback: ProviderFeedbackTable;
  domain_events: DomainEventsTable;
  emails: EmailsTable;
  delivery_claims: DeliveryClaimsTable;
  connection_leases: ConnectionLeasesTable;
  email_attachments: EmailAttachmentsTable;
  email_events: EmailEventsTable;
  suppressions: SuppressionsTable;
  idempotency_keys: IdempotencyKeysTable;
  dkim_keys: DkimKeysTable;
  worker_heartbeats: WorkerHeartbeatsTable;
  accounts: AccountsTable;
  workspaces: WorkspacesTable;
  workspace_members: WorkspaceMembersTable;
  projects: ProjectsTable;
  project_members: ProjectMembersTable;
  api_keys: ApiKeysTable;
  email_codes: EmailCodesTable;
  dashboard_sessions: DashboardSessionsTable;
  password_resets: PasswordResetsTable;
  login_failures: LoginFailuresTable;
  invitations: InvitationsTable;
  request_logs: RequestLogsTable;
  account_request_logs: RequestLogsTable;
  system_emails: SystemEmailsTable;
  mailbox_messages: MailboxMessagesTable;
  route_status: RouteStatusTable;
  campaign_stats_cache: CampaignStatsCacheTable;
  breaker_counts: BreakerCountsTable;
  breaker_trips: BreakerTripsTable;
  gate_overrides: GateOverridesTable;
  warmup_usage: WarmupUsageTable;
  warmup_source_usage: WarmupSourceUsageTable;
  dmarc_reports: DmarcReportsTable;
  dmarc_records: DmarcRecordsTable;
  tls_report_results: TlsReportResultsTable;
  dmarc_source_labels: DmarcSourceLabelsTable;
  dmarc_alerts: DmarcAlertsTable;
  domains: DomainsTable;
  contacts: ContactsTable;
  sending_usage: SendingUsageTable;
}
