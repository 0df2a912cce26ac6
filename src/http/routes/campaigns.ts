import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { chooseAbWinner } from '../../domain/campaigns/ab.ts';
import {
  createCampaign,
  deleteCampaign,
  getCampaign,
  listCampaigns,
  previewAudience,
  updateCampaign,
} from '../../domain/campaigns/campaigns.ts';
import { campaignChecklist } from '../../domain/campaigns/checklist.ts';
import { sendCampaign } from '../../domain/campaigns/send.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { projectFactsOf, projectOf } from '../auth.ts';
import { GateOverrideField, gateOverrideOf } from '../gate-override.ts';
import { OPTIONAL_BODY } from '../openapi.ts';
import { errors, IdParams, PageQuery, pageOf, typed } from '../schemas.ts';
import {
  AudienceSchema,
  CampaignPage,
  CampaignSchema,
  ChecklistSchema,
  CreateCampaignRequest,
  UpdateCampaignRequest,
  WinnerRequest,
} from './campaign-schemas.ts';

/** Campaigns: marketing sends to lists and segments (drafts, their audience, and sending). */
const SendRequest = Type.Object(
  { gate_override: GateOverrideField },
  { additionalProperties: false, title: 'SendCampaignRequest' },
);

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
  app.get(
    '/campaigns/:id/checklist',
    {
      config,
      schema: {
        ...one(
          'What sending the campaign now needs, item by item, with the checks POST /campaigns/{id}/send runs',
          'getCampaignChecklist',
        ),
        description:
          "Each check the send runs before a campaign starts, run on its own so every problem shows at once: the campaign's status, the account email, the footer address, the template's variables, the content, the sender's domain, the audience and the plan's allowance, and the tracking settings for the record. An item fails exactly when the send would be refused for it, and its `message` is the send's error; `ready` is true when every item is ok. The dashboard's pre-send checklist reads it.",
        response: { 200: ChecklistSchema, ...errors(401, 404) },
      },
    },
    async (request) => campaignChecklist(ctx, await projectFactsOf(request, ctx), request.params.id),
  );
  app.post(
    '/campaigns/:id/send',
    {
      config,
      schema: {
        ...one(
          'Send a campaign now: snapshots its audience and starts sending (400 footer placeholder, empty audience or failing bulk-sender checks, which a project admin may override with `gate_override`; 402 over the monthly allowance, 409 unless draft or scheduled; a paused campaign continues with /resume; GET /campaigns/{id}/checklist runs the same checks)',
          'sendCampaign',
        ),
        body: SendRequest,
        [OPTIONAL_BODY]: true,
        response: { 200: CampaignSchema, ...errors(400, 401, 402, 403, 404, 409, 429) },
      },
      // a send with no body (as before the gate) is a send without an override
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request) =>
      sendCampaign(
        ctx,
        await projectFactsOf(request, ctx),
        request.params.id,
        gateOverrideOf(request, request.body),
      ),
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
