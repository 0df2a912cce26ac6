import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
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
  preheader: Nullable(Type.String({ maxLength: 500 })),
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
  html: Nullable(Type.String({ description: 'inline HTML content (give this or `template_id`)' })),
  list_ids: Ids('send to the subscribed members of these lists'),
  segment_ids: Ids('and to the contacts matching these segments'),
  exclude_list_ids: Ids('minus every member of these lists'),
  exclude_segment_ids: Ids('minus the contacts matching these segments'),
  tracking: Tracking,
  tags: Type.Array(Tag, { maxItems: 50 }),
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
    scheduled_at: Nullable(Timestamp),
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
          'Send a campaign now: snapshots its audience and starts sending (400 footer placeholder or empty audience, 402 over the monthly allowance, 409 unless draft, scheduled or paused)',
          'sendCampaign',
        ),
        response: { 200: CampaignSchema, ...errors(400, 401, 402, 404, 409, 429) },
      },
    },
    async (request) => sendCampaign(ctx, await projectFactsOf(request, ctx), request.params.id),
  );
}
