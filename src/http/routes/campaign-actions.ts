import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import {
  cancelCampaign,
  pauseCampaign,
  resumeCampaign,
  scheduleCampaign,
  sendCampaignTest,
} from '../../domain/campaigns/actions.ts';
import { campaignActivity } from '../../domain/campaigns/activity.ts';
import { FRESH_MS } from '../../domain/campaigns/stats-cache.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { authOf, projectFactsOf, projectOf } from '../auth.ts';
import { GateOverrideField, gateOverrideOf } from '../gate-override.ts';
import { OPTIONAL_BODY } from '../openapi.ts';
import { errors, IdParams, Nullable, Timestamp, typed } from '../schemas.ts';

/**
 * The campaign as an action answers it: the same object as GET /campaigns/{id} (the `Campaign`
 * schema), of which the fields an action changes are named here; the others pass through.
 */
const CampaignActionResult = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('campaign'),
    name: Type.String(),
    status: Type.Enum(['draft', 'scheduled', 'sending', 'sent', 'paused', 'cancelled', 'failed'], {
      type: 'string',
    }),
    scheduled_at: Nullable(Timestamp),
    recipient_count: Nullable(Type.Integer()),
    started_at: Nullable(Timestamp),
    finished_at: Nullable(Timestamp),
    updated_at: Timestamp,
  },
  {
    title: 'CampaignActionResult',
    description: 'The campaign after the action, with every field of `Campaign`',
    additionalProperties: true,
  },
);
const ResumeRequest = Type.Object(
  {
    reason: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1000,
        description: 'why the campaign goes on (required when the circuit breaker paused it; recorded)',
      }),
    ),
  },
  { additionalProperties: false, title: 'ResumeRequest' },
);

const ScheduleRequest = Type.Object(
  {
    scheduled_at: Type.String({
      maxLength: 64,
      description:
        'when sending starts: an ISO 8601 date-time with a time zone, in the future and at most a year ahead',
    }),
    gate_override: GateOverrideField,
  },
  { title: 'ScheduleCampaignRequest' },
);
const TestRequest = Type.Object(
  {
    to: Type.Array(Type.String({ maxLength: 320 }), {
      minItems: 1,
      maxItems: 5,
      description: 'the account email addresses of members of this project: tests go nowhere else',
    }),
  },
  { title: 'CampaignTestRequest' },
);
const TestResult = Type.Object(
  {
    object: Type.Literal('campaign_test'),
    sent: Type.Array(Type.Object({ to: Type.String(), email_id: Type.String() })),
  },
  { title: 'CampaignTest' },
);

const ActivitySchema = Type.Object(
  {
    object: Type.Literal('campaign_activity'),
    as_of: Nullable(
      Type.String({
        description: `when this was counted; null: just now (a large sent campaign is counted at most every ${FRESH_MS / 1000} s, as its stats)`,
      }),
    ),
    bucket_seconds: Type.Integer({
      description: 'the width of a bucket: 60 (per minute) unless the campaign spans more than 120 minutes',
    }),
    buckets: Type.Array(
      Type.Object(
        {
          start: Timestamp,
          sent: Type.Integer({ description: 'messages the next hop accepted in this bucket' }),
          delivered: Type.Integer({
            description: 'messages that reached delivered (or complained) in this bucket',
          }),
          bounced: Type.Integer({ description: 'messages that bounced in this bucket' }),
        },
        { title: 'CampaignActivityBucket' },
      ),
      { description: 'from the first message sent to the latest change, oldest first, at most 120' },
    ),
    top_links: Type.Array(
      Type.Object(
        {
          url: Type.String(),
          clicks_unique: Type.Integer({
            description: 'people who clicked it (link scanners are not counted)',
          }),
          clicks_total: Type.Integer({ description: 'their clicks' }),
        },
        { title: 'CampaignTopLink' },
      ),
      { description: 'the 10 links clicked by the most people' },
    ),
  },
  { title: 'CampaignActivity' },
);

/** Campaign actions: schedule, pause, resume, cancel and test sends (POST /campaigns/{id}/send is in campaigns.ts), and activity. */
export async function campaignActionRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const config = { auth: 'project' as const };
  const tags = ['campaigns'];
  const one = (summary: string, operationId: string) => ({ tags, summary, operationId, params: IdParams });

  app.get(
    '/campaigns/:id/activity',
    {
      config,
      schema: {
        ...one(
          'A campaign over time (sent, delivered, bounced per minute) and its most clicked links',
          'getCampaignActivity',
        ),
        response: { 200: ActivitySchema, ...errors(401, 404) },
      },
    },
    async (request) => campaignActivity(ctx, projectOf(request), request.params.id),
  );
  app.post(
    '/campaigns/:id/schedule',
    {
      config,
      schema: {
        ...one(
          'Schedule a campaign (checked now as a send would be, the bulk-sender gate included; rescheduling replaces the time; 400 past or more than a year ahead, 409 unless draft or scheduled)',
          'scheduleCampaign',
        ),
        body: ScheduleRequest,
        response: { 200: CampaignActionResult, ...errors(400, 401, 402, 404, 409, 429) },
      },
    },
    async (request) =>
      scheduleCampaign(
        ctx,
        await projectFactsOf(request, ctx),
        request.params.id,
        request.body.scheduled_at,
        gateOverrideOf(request, request.body),
      ),
  );
  app.post(
    '/campaigns/:id/pause',
    {
      config,
      schema: {
        ...one(
          'Pause a sending campaign: messages not yet handed over wait until it is resumed (409 unless sending)',
          'pauseCampaign',
        ),
        response: { 200: CampaignActionResult, ...errors(401, 404, 409) },
      },
    },
    async (request) => pauseCampaign(ctx, projectOf(request), request.params.id),
  );
  app.post(
    '/campaigns/:id/resume',
    {
      config,
      schema: {
        ...one(
          'Resume a paused campaign to the rest of its audience, as snapshotted when it started (409 unless paused). One the circuit breaker paused (its `paused_reason` says why) resumes only by a project admin with a `reason`, which is recorded (400 without one, 403 for a member)',
          'resumeCampaign',
        ),
        body: ResumeRequest,
        [OPTIONAL_BODY]: true,
        response: { 200: CampaignActionResult, ...errors(400, 401, 402, 403, 404, 409, 429) },
      },
      // a resume with no body (as before the breaker) is a resume without a reason
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request) => {
      const auth = authOf(request);
      return resumeCampaign(ctx, await projectFactsOf(request, ctx), request.params.id, {
        who: auth.key ? `key ${auth.key.id}` : `account ${auth.accountId}`,
        admin: auth.session ? auth.role === 'admin' || auth.role === 'owner' : true,
        reason: request.body?.reason,
      });
    },
  );
  app.post(
    '/campaigns/:id/cancel',
    {
      config,
      schema: {
        ...one(
          'Cancel a campaign: messages not yet handed over never leave (409 once sent, cancelled or failed)',
          'cancelCampaign',
        ),
        response: { 200: CampaignActionResult, ...errors(401, 404, 409) },
      },
    },
    async (request) => cancelCampaign(ctx, projectOf(request), request.params.id),
  );
  app.post(
    '/campaigns/:id/test',
    {
      config,
      schema: {
        ...one(
          'Send a test of a campaign to project members ([Test] subject, not in its stats; 400 for any other address, 409 once cancelled)',
          'testCampaign',
        ),
        body: TestRequest,
        response: { 200: TestResult, ...errors(400, 401, 402, 404, 409, 429) },
      },
    },
    async (request) =>
      sendCampaignTest(ctx, await projectFactsOf(request, ctx), request.params.id, request.body.to),
  );
}
