import { Type } from 'typebox';
import { CACHE_FROM_RECIPIENTS, FRESH_MS } from '../../domain/campaigns/stats-cache.ts';
import { Nullable, page, Timestamp } from '../schemas.ts';

/**
 * Schemas of the campaign routes (campaigns.ts): the campaign as created, edited and read, its
 * audience count and the A/B winner pick; what they declare is what the routes validate, type and
 * publish in the OpenAPI document.
 */

/** Values for a template's variables, given beside `template_id`. */
const TemplateValues = (description: string) =>
  Type.Record(Type.String({ maxLength: 64 }), Type.Union([Type.String(), Type.Number(), Type.Boolean()]), {
    maxProperties: 100,
    description,
  });
const Ids = (description: string) =>
  Type.Array(Type.String({ maxLength: 100 }), { maxItems: 100, description });
const Tag = Type.Object(
  { name: Type.String(), value: Type.String() },
  { title: 'CampaignTag', description: 'letters, digits, _ and - (1 to 256 characters)' },
);
const Tracking = Type.Object(
  { opens: Type.Optional(Type.Boolean()), clicks: Type.Optional(Type.Boolean()) },
  { title: 'CampaignTracking' },
);

const CampaignRate = Type.Object(
  {
    per_second: Type.Optional(
      Nullable(
        Type.Integer({
          minimum: 1,
          maximum: 100_000,
          description: "messages per second; null: the project's",
        }),
      ),
    ),
    per_hour: Type.Optional(
      Nullable(
        Type.Integer({
          minimum: 1,
          maximum: 360_000_000,
          description: "messages per hour; null: the project's",
        }),
      ),
    ),
  },
  {
    title: 'CampaignRate',
    description:
      "this campaign's sending rate, replacing the project's (PATCH /me/sending-rate) when one part is set; shared by every worker",
  },
);
const AbVariant = Type.Object(
  {
    name: Type.Optional(
      Type.String({
        maxLength: 64,
        description: 'letters, digits, _ and - (the `variation` tag of its emails); A, B, ... when not given',
      }),
    ),
    subject: Type.Optional(Type.String({ maxLength: 998 })),
    html: Type.Optional(Type.String({ description: 'inline HTML content (replaces a template)' })),
    template_id: Type.Optional(
      Type.String({ maxLength: 100, description: 'a published template (replaces HTML)' }),
    ),
    template_version: Type.Optional(
      Nullable(
        Type.Integer({
          minimum: 1,
          maximum: 1_000_000,
          description: 'the latest when sending starts if absent',
        }),
      ),
    ),
    variables: Type.Optional(
      TemplateValues(
        "values for the variant's template's variables (with its `template_id`; the campaign's `variables` do not apply to it)",
      ),
    ),
    from_name: Type.Optional(Type.String({ maxLength: 200 })),
  },
  {
    title: 'CampaignAbVariant',
    description: "a variant: the campaign's fields it gives replace the campaign's",
  },
);
const AbTest = Type.Object(
  {
    variants: Type.Array(AbVariant, { minItems: 2, maxItems: 8 }),
    test_share: Type.Integer({
      minimum: 1,
      maximum: 100,
      description:
        'percent of the audience that gets the test, split evenly among the variants; 100: a pure split, no winner',
    }),
    winner_by: Type.Enum(['opens', 'clicks', 'revenue', 'manual'], {
      type: 'string',
      description:
        'unique human opens, unique human clicks or attributed revenue per test recipient (ties: the lowest index); manual: POST /campaigns/{id}/ab/winner',
    }),
    wait_minutes: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 10_080,
        description: 'from the last test email to the winner; 240 if no wait is given',
      }),
    ),
    wait_seconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 604_800,
        description: 'the wait in seconds instead (short trials)',
      }),
    ),
  },
  { title: 'CampaignAbTest', description: 'an A/B test (plan feature `ab_testing`)' },
);
const Revenue = Type.Array(
  Type.Object(
    { currency: Type.String(), amount: Type.Number(), events: Type.Integer() },
    { title: 'CampaignRevenue' },
  ),
  {
    description:
      'tracked events with a value attributed to the campaign (a human click within 7 days before), per currency',
  },
);
const Engagement = Type.Object(
  {
    unique: Type.Integer({ description: 'recipients with at least one' }),
    total: Type.Integer({ description: 'every one' }),
  },
  {
    title: 'CampaignEngagement',
    description: 'by people: machine opens and clicks (privacy proxies, link scanners) are not counted',
  },
);
const optionalCount = (description: string) => Type.Optional(Type.Integer({ description }));
const CampaignStats = Type.Object(
  {
    recipients: Type.Integer({ description: 'the audience snapshot' }),
    sent: optionalCount('emails the next hop accepted'),
    delivered: optionalCount('emails the last hop accepted (mail handed to a relay stays sent)'),
    bounced: optionalCount('emails that bounced'),
    complained: optionalCount('emails marked as spam'),
    opens: Type.Optional(Engagement),
    clicks: Type.Optional(Engagement),
    unsubscribed: optionalCount('recipients who unsubscribed through its emails'),
    revenue: Revenue,
  },
  {
    title: 'CampaignStats',
    description:
      'GET /campaigns/{id} (and create, edit, winner pick) give every count, computed now; list rows give only `recipients` and `revenue`, the cheap part',
  },
);
const AbResults = Type.Object(
  {
    phase: Type.Enum(
      ['not_started', 'testing', 'waiting', 'picking_winner', 'waiting_for_pick', 'sending_winner', 'done'],
      { type: 'string' },
    ),
    winner_by: Type.String(),
    winner_variant: Nullable(Type.Integer({ description: 'the index of the winning variant' })),
    winner_due_at: Nullable(Timestamp),
    variants: Type.Array(
      Type.Object(
        {
          index: Type.Integer(),
          name: Type.String(),
          recipients: Type.Integer(),
          sent: Type.Integer(),
          opens_unique: Type.Integer(),
          clicks_unique: Type.Integer(),
          revenue: Revenue,
        },
        { title: 'CampaignAbVariantResult' },
      ),
    ),
    rest: Type.Object(
      { recipients: Type.Integer(), sent: Type.Integer() },
      { description: 'the audience outside the test, which gets the winner' },
    ),
  },
  { title: 'CampaignAbResults' },
);
export const WinnerRequest = Type.Object(
  {
    variant: Type.Integer({
      minimum: 0,
      maximum: 7,
      description: 'the index of the variant in `ab_test.variants`',
    }),
  },
  { title: 'CampaignAbWinnerRequest' },
);

const editable = {
  from: Nullable(
    Type.String({
      description:
        'an address on a verified domain (or the shared default address); `Name <address>` also sets `from_name`',
    }),
  ),
  from_name: Nullable(Type.String({ maxLength: 200 })),
  reply_to: Nullable(Type.String()),
  subject: Nullable(
    Type.String({
      maxLength: 998,
      description:
        "required unless `template_id` gives one; null (or absent) with a template: the template's subject, of the version sent. Choosing another template without a `subject` takes that template's",
    }),
  ),
  preheader: Nullable(
    Type.String({
      maxLength: 500,
      description: "the line a mail client shows after the subject; replaces a template's own",
    }),
  ),
  template_id: Nullable(
    Type.String({ description: 'a published template of the project (give this or `html`)' }),
  ),
  template_version: Nullable(
    Type.Integer({
      minimum: 1,
      maximum: 1_000_000,
      description: 'a published version; the latest when absent',
    }),
  ),
  variables: Nullable(
    TemplateValues(
      "values for the template's variables (defaults fill the rest; a required variable without one is refused when the campaign is saved)",
    ),
  ),
  html: Nullable(Type.String({ description: 'inline HTML content (give this or `template_id`)' })),
  list_ids: Ids('send to the subscribed members of these lists'),
  segment_ids: Ids('and to the contacts matching these segments'),
  exclude_list_ids: Ids('minus every member of these lists'),
  exclude_segment_ids: Ids('minus the contacts matching these segments'),
  topic_id: Nullable(
    Type.String({
      maxLength: 100,
      description:
        "a topic of the project (GET /v1/topics): only contacts subscribed to it get the campaign (by choice, or by the topic's default), and its one-click unsubscribe leaves that topic only; null: no topic (unsubscribing leaves all marketing)",
    }),
  ),
  local_time: Nullable(
    Type.String({
      maxLength: 5,
      description:
        "`HH:MM` (24-hour): each recipient's message leaves at this time in their own zone (`properties.timezone` when it names an IANA zone, else the project's, GET /v1/me/local-time), the next time it comes round after the campaign starts (/send: within 24 h; /schedule: within 24 h of `scheduled_at`), and after the project's quiet hours when it falls inside them; null: every message as soon as sending reaches it",
    }),
  ),
  tracking: Tracking,
  tags: Type.Array(Tag, { maxItems: 50 }),
  rate: Nullable(CampaignRate),
  ab_test: Nullable(AbTest),
};
const optionalEditable = Object.fromEntries(
  Object.entries(editable).map(([k, v]) => [k, Type.Optional(v)]),
) as { [K in keyof typeof editable]: import('typebox').TOptional<(typeof editable)[K]> };

export const CreateCampaignRequest = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200 }), ...optionalEditable },
  { title: 'CreateCampaignRequest' },
);
export const UpdateCampaignRequest = Type.Object(
  { name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })), ...optionalEditable },
  { title: 'UpdateCampaignRequest' },
);

const CampaignWarmup = Type.Object(
  {
    domain: Type.String(),
    day: Type.Integer({ description: "today's day of the domain's warm-up plan (1 = the first)" }),
    days: Type.Integer({ description: 'days in the plan' }),
    today: Type.Object({ date: Type.String(), volume: Type.Integer(), used: Type.Integer() }),
    pending: Type.Integer({ description: 'recipients still to send (the audience, before it starts)' }),
    planned_days: Type.Array(Type.Object({ date: Type.String(), messages: Type.Integer() }), {
      description:
        "the days the pending recipients are planned for, engaged contacts first: what is left of today's volume, then each day's (other mail of the domain takes its share first)",
    }),
    after_plan: Type.Integer({
      description: "recipients left past the plan's last day, when nothing is capped",
    }),
  },
  {
    title: 'CampaignWarmup',
    description:
      "the sending domain's warm-up plan holds this campaign to each day's volume (GET /domains/{id} `warmup`); null when its domain has none",
  },
);

export const CampaignSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('campaign'),
    name: Type.String(),
    status: Type.Enum(['draft', 'scheduled', 'sending', 'sent', 'paused', 'cancelled', 'failed'], {
      type: 'string',
    }),
    ...editable,
    tracking: Type.Object({ opens: Type.Boolean(), clicks: Type.Boolean() }),
    rate: Type.Object({ per_second: Nullable(Type.Integer()), per_hour: Nullable(Type.Integer()) }),
    stats: Type.Optional(CampaignStats),
    ab: Type.Optional(Nullable(AbResults)),
    warmup: Type.Optional(Nullable(CampaignWarmup)),
    waiting: Type.Optional(
      Type.Array(Type.Object({ at: Timestamp, count: Type.Integer() }, { title: 'CampaignWaiting' }), {
        description:
          "while sending or paused: recipients still waiting for their local time (`local_time`) or the end of the project's quiet hours, by the instant their message leaves",
      }),
    ),
    stats_as_of: Type.Optional(
      Nullable(
        Type.String({
          description: `when \`stats\` were counted; null: just now. A sent campaign of ${CACHE_FROM_RECIPIENTS.toLocaleString('en')} recipients or more is counted at most every ${FRESH_MS / 1000} s (a read after that gets the last count and a new one follows)`,
        }),
      ),
    ),
    scheduled_at: Nullable(Timestamp),
    failure_reason: Nullable(
      Type.String({
        description:
          'status `failed`: why a scheduled campaign could not start, or why none of its messages went out',
      }),
    ),
    paused_reason: Nullable(
      Type.String({
        description:
          'status `paused` by the circuit breaker: the rate that crossed its stop threshold (resume with a `reason`); null when paused by hand',
      }),
    ),
    recipient_count: Nullable(
      Type.Integer({ description: 'set when sending starts (the audience snapshot)' }),
    ),
    started_at: Nullable(Timestamp),
    finished_at: Nullable(Timestamp),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'Campaign' },
);
export const CampaignPage = Type.Object(page(CampaignSchema).properties, { title: 'CampaignPage' });
export const AudienceSchema = Type.Object(
  {
    object: Type.Literal('campaign_audience'),
    campaign_id: Type.String(),
    recipients: Type.Integer({ description: 'contacts the campaign would reach if sending started now' }),
  },
  { title: 'CampaignAudience' },
);
export const ChecklistSchema = Type.Object(
  {
    object: Type.Literal('campaign_checklist'),
    campaign_id: Type.String(),
    ready: Type.Boolean({
      description: 'every item ok: POST /campaigns/{id}/send would start the campaign now',
    }),
    items: Type.Array(
      Type.Object(
        {
          id: Type.Enum(
            [
              'status',
              'account',
              'footer',
              'variables',
              'content',
              'sender',
              'audience',
              'allowance',
              'gate',
              'dkim',
              'spf',
              'dmarc',
              'reverse_dns',
              'unsubscribe',
              'tracking',
            ],
            {
              type: 'string',
              description:
                "status: a draft or scheduled campaign (409 otherwise); account: the account email confirmed; footer: your postal address in the footer, not the placeholder; variables: every required variable of the template (and of each A/B variant's) has a value; content: subject and content render; sender: `from` on a verified domain (or the shared default address); audience: at least one recipient; allowance: the plan's monthly allowance and the shared domain's daily cap hold for the audience; the bulk-sender gate (POSTHORN_BULK_GATE), as receivers check mail: dkim: DKIM passes aligned with the From domain; spf: SPF passes for the return path, aligned; dmarc: a DMARC record exists and the message passes it; reverse_dns: each source address of a direct route has forward-confirmed reverse DNS; unsubscribe: the message's List-Unsubscribe URL unsubscribes a canary with one RFC 8058 POST; gate: why those are not checked (the gate off, or all mail to the dev mailbox); tracking: the opens and clicks settings (always ok, for the record)",
            },
          ),
          status: Type.Enum(['ok', 'failing', 'unchecked'], {
            type: 'string',
            description:
              'failing: /send would be refused for it, with `message` as its error; unchecked: it is checked once an item it depends on passes',
          }),
          message: Type.String({ description: 'what passed, or what fails and how to fix it' }),
        },
        { title: 'CampaignChecklistItem' },
      ),
      { description: 'in the order /send checks them' },
    ),
  },
  { title: 'CampaignChecklist' },
);
