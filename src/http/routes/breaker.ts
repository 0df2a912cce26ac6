import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import { openTrips, resumeStops } from '../../domain/shaping/breaker-api.ts';
import { authOf, projectOf } from '../auth.ts';
import { errors, Nullable, Timestamp, typed } from '../schemas.ts';

const TripSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('breaker_trip'),
    scope: Type.Enum(['campaign', 'flow', 'domain', 'project'], {
      type: 'string',
      description: 'what was judged: a campaign, a flow, a sending domain or the whole project',
    }),
    key: Type.String({ description: 'the id of the campaign, flow, domain or project' }),
    level: Type.Enum(['warn', 'stop'], { type: 'string' }),
    metric: Type.Enum(['hard_bounce_rate', 'complaint_rate'], { type: 'string' }),
    rate: Type.Number({ description: 'percent' }),
    threshold: Type.Number({ description: 'percent' }),
    messages: Type.Integer({ description: 'the messages the rate was judged on' }),
    reason: Type.String(),
    created_at: Timestamp,
    resumed_at: Nullable(Timestamp),
    resumed_by: Nullable(Type.String()),
    resume_reason: Nullable(Type.String()),
  },
  { title: 'BreakerTrip' },
);
const TripList = Type.Object(
  { object: Type.Literal('list'), data: Type.Array(TripSchema) },
  { title: 'BreakerTripList' },
);
const ResumeStopsRequest = Type.Object(
  {
    reason: Type.String({
      minLength: 1,
      maxLength: 1000,
      description: 'what was fixed, or why mail should go on (recorded)',
    }),
    trip_id: Type.Optional(
      Type.String({
        description: 'one stop to resume (default: every open stop of a domain or of the project)',
      }),
    ),
  },
  { additionalProperties: false, title: 'ResumeStopsRequest' },
);

/** The circuit breaker's open decisions, and the resume of a domain's or the project's stop. */
export async function breakerRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const config = { auth: 'project' as const };
  const tags = ['breaker'];
  app.get(
    '/breaker',
    {
      config,
      schema: {
        tags,
        summary:
          "The circuit breaker's open decisions (warnings and stops) of this project's campaigns, flows, sending domains and the project itself",
        operationId: 'listBreakerTrips',
        response: { 200: TripList, ...errors(401) },
      },
    },
    async (request) => openTrips(ctx, projectOf(request)),
  );
  app.post(
    '/breaker/resume',
    {
      config,
      schema: {
        tags,
        summary:
          "Resume the marketing a sending domain's or the project's stop holds, with a recorded reason (project admins and API keys; 403 for a member, 400 with nothing to resume). Campaigns and flows it paused are resumed each on its own",
        operationId: 'resumeBreakerStops',
        body: ResumeStopsRequest,
        response: { 200: TripList, ...errors(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      return resumeStops(
        ctx,
        projectOf(request),
        {
          who: auth.key ? `key ${auth.key.id}` : `account ${auth.accountId}`,
          admin: auth.session ? auth.role === 'admin' || auth.role === 'owner' : true,
          reason: request.body.reason,
        },
        request.body.trip_id,
      );
    },
  );
}
