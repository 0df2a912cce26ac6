import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { chooseAbWinner } from '../../domain/campaigns/ab.ts';
import { previewAudience } from '../../domain/campaigns/audience.ts';
import {
  createCampaign,
  deleteCampaign,
  getCampaign,
  listCampaigns,
  updateCampaign,
} from '../../domain/campaigns/campaigns.ts';
import { sendCampaign } from '../../domain/campaigns/send.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { projectFactsOf, projectOf } from '../auth.ts';
import { errors, IdParams, Nullable, PageQuery, page, pageOf, Timestamp, typed } from '../schemas.ts';

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
const WinnerRequest = Type.Object(
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
  subject: Nullable(Type.String({ maxLength: 998, description: 'required unless `template_id` gives one' })),
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
  tracking: Tracking,
  tags: Type.Array(Tag, { maxItems: 50 }),
  rate: Nullable(CampaignRate),
  ab_test: Nullable(AbTest),
};
const optionalEditable = Object.fromEntries(
  Object.entries(editable).map(([k, v]) => [k, Type.Optional(v)]),
) as { [K in keyof typeof editable]: import('typebox').TOptional<(typeof editable)[K]> };

const CreateCampaignRequest = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200 }), ...optionalEditable },
  { title: 'CreateCampaignRequest' },
);
const UpdateCampaignRequest = Type.Object(
  { name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })), ...optionalEditable },
  { title: 'UpdateCampaignRequest' },
);

const CampaignSchema = Type.Object(
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
    scheduled_at: Nullable(Timestamp),
    failure_reason: Nullable(
      Type.String({
        description:
          'status `failed`: why a scheduled campaign could not start, or why none of its messages went out',
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
const CampaignPage = Type.Object(page(CampaignSchema).properties, { title: 'CampaignPage' });
const AudienceSchema = Type.Object(
  {
    object: Type.Literal('campaign_audience'),
    campaign_id: Type.String(),
    recipients: Type.Integer({ description: 'contacts the campaign would reach if sending started now' }),
  },
  { title: 'CampaignAudience' },
);

/** Campaigns: marketing sends to lists and segments (drafts, their audience, and sending). */
export async function campaignRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const config = { auth: 'project' as const };
  const tags = ['campaigns'];
  const one = (summary: string, operationId: string) => ({ tags, summary, operationId, params: IdParams });

  app.get(
    '/campaigns',
    {
      config,
      schema: {
        tags,
        summary: 'List campaigns, newest first',
        operationId: 'listCampaigns',
        querystring: PageQuery,
        response: { 200: CampaignPage, ...errors(400, 401) },
      },
    },
    async (request) => listCampaigns(ctx, projectOf(request), pageOf(request.query)),
  );
  app.post(
    '/campaigns',
    {
      config,
      schema: {
        tags,
        summary: 'Create a campaign draft (sender, content and audience are checked now)',
        operationId: 'createCampaign',
        body: CreateCampaignRequest,
        response: { 200: CampaignSchema, ...errors(400, 401) },
      },
    },
    async (request) => createCampaign(ctx, await projectFactsOf(request, ctx), request.body),
  );
  app.get(
    '/campaigns/:id',
    {
      config,
      schema: {
        ...one('Get a campaign', 'getCampaign'),
        response: { 200: CampaignSchema, ...errors(401, 404) },
      },
    },
    async (request) => getCampaign(ctx, projectOf(request), request.params.id),
  );
  app.patch(
    '/campaigns/:id',
    {
      config,
      schema: {
        ...one('Edit a campaign (409 once it is sending, sent or cancelled)', 'updateCampaign'),
        body: UpdateCampaignRequest,
        response: { 200: CampaignSchema, ...errors(400, 401, 404, 409) },
      },
    },
    async (request) =>
      updateCampaign(ctx, await projectFactsOf(request, ctx), request.params.id, request.body),
  );
  app.delete(
    '/campaigns/:id',
    {
      config,
      schema: {
        ...one('Delete a campaign (409 while it is sending)', 'deleteCampaign'),
        response: { 204: Type.Null(), ...errors(401, 404, 409) },
      },
    },
    async (request, reply) => {
      await deleteCampaign(ctx, projectOf(request), request.params.id);
      return reply.code(204).send();
    },
  );
  app.get(
    '/campaigns/:id/audience',
    {
      config,
      schema: {
        ...one('How many contacts the campaign would reach if sending started now', 'getCampaignAudience'),
        response: { 200: AudienceSchema, ...errors(401, 404) },
      },
    },
    async (request) => previewAudience(ctx, projectOf(request), request.params.id),
  );
  app.post(
    '/campaigns/:id/send',
    {
      config,
      schema: {
        ...one(
          'Send a campaign now: snapshots its audience and starts sending (400 footer placeholder or empty audience, 402 over the monthly allowance, 409 unless draft or scheduled; a paused campaign continues with /resume)',
          'sendCampaign',
        ),
        response: { 200: CampaignSchema, ...errors(400, 401, 402, 404, 409, 429) },
      },
    },
    async (request) => sendCampaign(ctx, await projectFactsOf(request, ctx), request.params.id),
  );
  app.post(
    '/campaigns/:id/ab/winner',
    {
      config,
      schema: {
        ...one(
          "Pick an A/B campaign's winner: the rest of the audience gets it (409 without an A/B winner phase, once picked, or unless sending or paused)",
          'pickCampaignAbWinner',
        ),
        body: WinnerRequest,
        response: { 200: CampaignSchema, ...errors(400, 401, 404, 409) },
      },
    },
    async (request) => chooseAbWinner(ctx, projectOf(request), request.params.id, request.body.variant),
  );
}
