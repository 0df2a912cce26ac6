/** The shapes the screens read, as the API documents them (GET /v1/openapi.json). */

export type Role = 'owner' | 'admin' | 'member';

export interface SessionProject {
  id: string;
  name: string;
  role: Role;
  workspace_id: string;
}

/** GET /api/session: who is signed in, the anti-forgery token for writes, and their projects. */
export interface Session {
  account: { id: string; email: string; name: string; email_confirmed?: boolean; has_password?: boolean };
  csrf_token: string;
  projects: SessionProject[];
}

export interface Page<T> {
  data: T[];
  total: number;
  limit: number;
  offset: number;
}

export interface ApiKey {
  id: string;
  object: 'api_key';
  name: string;
  scope: 'project' | 'all_access';
  project_id: string | null;
  token_prefix: string;
  status: 'active' | 'expired' | 'revoked';
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
  rotated_at: string | null;
  /** The account that made the key: removing it from the project revokes the key (unless kept). */
  created_by: string | null;
  /** The secret: present only in the answer that creates (or rotates) the key. */
  key?: string;
}

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

export interface Email {
  id: string;
  object: 'email';
  stream: string;
  status: EmailStatus;
  message_id: string;
  from: string;
  to: string[];
  cc: string[];
  bcc: string[];
  reply_to: string[];
  subject: string;
  tags: { name: string; value: string }[];
  headers: Record<string, string>;
  attachments: { filename: string | null; content_type: string | null; size: number }[];
  size_bytes: number;
  attempts: number;
  last_response: string | null;
  scheduled_at: string | null;
  sent_at: string | null;
  created_at: string;
}

export interface EmailEvent {
  object: 'email_event';
  type: string;
  recipient: string | null;
  detail: Record<string, unknown>;
  created_at: string;
}

export interface EmailWithEvents extends Email {
  html: string | null;
  text: string | null;
  events: EmailEvent[];
}

export interface Limits {
  plan: string;
  plan_name: string;
  contacts: { count: number; limit: number };
  sending: {
    this_month: number;
    included_per_month: number | null;
    remaining: number | null;
    over_limit: boolean;
  };
  features: Record<string, boolean>;
}

export interface AccountStatus {
  project: { id: string; name: string };
  sending: {
    ready: boolean;
    email_confirmed: boolean;
    verified_domains: string[];
    default_from: string;
    note: string;
  };
  footer: { address: string; is_your_own_address: boolean };
}

/** What an invitation link shows before it is accepted. */
export interface InvitationPreview {
  id: string;
  email: string;
  role: Role;
  status: 'pending' | 'accepted' | 'expired';
  expires_at: string;
  project: { id: string; name: string };
  invited_by: { name: string; email: string } | null;
  /** An existing account signs in to accept; otherwise accepting creates it. */
  account_exists: boolean;
}
