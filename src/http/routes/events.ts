import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import {
  checkEvent,
  checkEventContactLimit,
  EventTracker,
  listEvents,
  MAX_EVENTS_PER_CALL,
  revenueReport,
} from '../../domain/audience/events.ts';
import type { DomainContext } from '../../domain/context.ts';
import { ValidationError } from '../../domain/errors.ts';
import { projectFactsOf, projectOf } from '../auth.ts';
import { bearerSecurity, errors, Nullable, PageQuery, page } from '../schemas.ts';

export const EventSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('event'),
  event: Type.String(),
  email: Type.String(),
  contact_id: Type.String(),
  properties: Type.Record(Type.String(), Type.Unknown()),
  value: Nullable(Type.Number()),
  currency: Nullable(Type.String()),
  quantity: Nullable(Type.Number()),
  campaign_id: Nullable(Type.String()),
  flow_id: Nullable(Type.String()),
  created_at: Type.String(),
});
export const EventsQuery = Type.Object({
  ...PageQuery.properties,
  event: Type.Optional(Type.String({ description: 'event name' })),
  email: Type.Optional(Type.String()),
  created_after: Type.Optional(Type.String({ description: 'ISO 8601 date' })),
  created_before: Type.Optional(Type.String({ description: 'ISO 8601 date' })),
});
const Tracked = Type.Object({
  object: Type.Literal('event'),
  id: Type.String(),
  contact_id: Type.String(),
  contact_created: Type.Boolean({ description: 'true when the address was not a contact yet' }),
});

/** Tracked customer events and revenue. */
export async function eventRoutes(app: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const config = { auth: 'project' as const };
  const tags = ['events'];
  const tracker = ctx.eventTracker ?? new EventTracker(ctx.db);

  app.post(
    '/events',
    {
      config,
      schema: {
        tags,
        summary: 'Track an event (or up to 100 in an array)',
        description:
          'Connects a named action to an email address: `email` and `event` are required; `properties` is free-form; `value` with an ISO 4217 `currency` (and `quantity`) counts as revenue. An address that is not a contact yet becomes one (subscribed); on a plan with a contact limit, an event that would create a contact past it is refused with 402. Answered once the event is committed. An array of events is validated whole (a bad one refuses all, naming its index) and answered as {data: [...]}.',
        security: bearerSecurity,
        body: Type.Unknown({
          description: '{email, event, properties, value, currency, quantity} or an array of them',
        }),
        response: {
          200: Type.Union([Tracked, Type.Object({ data: Type.Array(Tracked) })]),
          ...errors(400, 401, 402),
        },
      },
    },
    async (request) => {
      const projectId = projectOf(request);
      const body = request.body;
      if (Array.isArray(body)) {
        if (body.length === 0 || body.length > MAX_EVENTS_PER_CALL)
          throw new ValidationError(`Send 1 to ${MAX_EVENTS_PER_CALL} events in one call`);
        const events = body.map((e, i) => checkEvent(projectId, e, `[${i}].`));
        await checkEventContactLimit(ctx, await projectFactsOf(request, ctx), events);
        return { data: await tracker.track(events) };
      }
      const event = checkEvent(projectId, body);
      await checkEventContactLimit(ctx, await projectFactsOf(request, ctx), [event]);
      const [result] = await tracker.track([event]);
      return result;
    },
  );
  app.get(
    '/events',
    {
      config,
      schema: {
        tags,
        summary: 'Tracked events, newest first',
        security: bearerSecurity,
        querystring: EventsQuery,
        response: { 200: page(EventSchema), ...errors(400, 401) },
      },
    },
    async (request) => listEvents(ctx, projectOf(request), request.query as never),
  );
  app.get(
    '/reports/revenue',
    {
      config,
      schema: {
        tags,
        summary: 'Revenue: the sum of event values per currency, by day, event, campaign or flow',
        security: bearerSecurity,
        querystring: Type.Object({
          group_by: Type.Optional(
            Type.String({ enum: ['day', 'event', 'campaign', 'flow'], default: 'day' }),
          ),
          from: Type.Optional(Type.String({ description: 'ISO 8601 date (inclusive)' })),
          to: Type.Optional(Type.String({ description: 'ISO 8601 date (exclusive)' })),
          currency: Type.Optional(Type.String()),
        }),
        response: {
          200: Type.Object({
            object: Type.Literal('revenue_report'),
            group_by: Type.String(),
            data: Type.Array(
              Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Null()])),
            ),
          }),
          ...errors(400, 401),
        },
      },
    },
    async (request) => revenueReport(ctx, projectOf(request), request.query as never),
  );
}
