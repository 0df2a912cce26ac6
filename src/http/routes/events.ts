import type { FastifyInstance } from 'fastify';
import { type Static, Type } from 'typebox';
import { listEvents, MAX_EVENTS_PER_CALL, revenueReport, trackEvents } from '../../domain/audience/events.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { projectFactsOf, projectOf } from '../auth.ts';
import { errors, Nullable, PageQuery, page, pageOf, typed } from '../schemas.ts';

export const EventSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('event'),
    event: Type.String(),
    email: Type.String(),
    contact_id: Type.String(),
    properties: Type.Record(Type.String(), Type.Unknown(), {
      description: 'what was sent with the event',
    }),
    value: Nullable(Type.Number()),
    currency: Nullable(Type.String()),
    quantity: Nullable(Type.Number()),
    campaign_id: Nullable(Type.String()),
    flow_id: Nullable(Type.String()),
    created_at: Type.String(),
  },
  { title: 'Event' },
);
export const EventsQuery = Type.Object({
  ...PageQuery.properties,
  event: Type.Optional(Type.String({ description: 'event name' })),
  email: Type.Optional(Type.String({ description: "the contact's address, any case" })),
  created_after: Type.Optional(Type.String({ description: 'ISO 8601 date' })),
  created_before: Type.Optional(Type.String({ description: 'ISO 8601 date' })),
});
/** A property's value, in contact and event properties: a string (of at most 2,000 characters), a number or a boolean. */
export const PropertyValue = Type.Union([Type.String({ maxLength: 2000 }), Type.Number(), Type.Boolean()]);
export const PROPERTIES_HELP =
  'up to 100, named with letters, digits, _ and - (at most 64); a date is an ISO 8601 string';
const Amount = (description: string) => Type.Optional(Nullable(Type.Number({ description })));
const TrackEventRequest = Type.Object(
  {
    email: Type.String({ description: "the contact's address; an unknown one becomes a contact" }),
    event: Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'the name of the action, like "purchase"',
    }),
    properties: Type.Optional(
      Type.Record(Type.String(), PropertyValue, {
        maxProperties: 100,
        description: `free-form properties: ${PROPERTIES_HELP}`,
      }),
    ),
    value: Amount(
      'revenue, in `currency`; without a currency it is revenue without one (reported in rows of `currency: null`)',
    ),
    currency: Type.Optional(
      Nullable(
        Type.String({
          description:
            'an ISO 4217 code such as EUR, in any case; optional (projects have no default currency, so a `value` without one stays without)',
        }),
      ),
    ),
    quantity: Amount('how many items'),
  },
  { title: 'TrackEventRequest' },
);
type TrackEventRequest = Static<typeof TrackEventRequest>;
const TrackEventsBody = Type.Unsafe<TrackEventRequest | TrackEventRequest[]>({
  // an if, not a union: errors then name the field at fault instead of "must be an array"
  if: { type: 'array' },
  // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else, never awaited
  then: Type.Array(TrackEventRequest),
  else: TrackEventRequest,
  description: `one event, or an array of 1 to ${MAX_EVENTS_PER_CALL}`,
});
const Tracked = Type.Object(
  {
    object: Type.Literal('event'),
    id: Type.String(),
    contact_id: Type.String(),
    contact_created: Type.Boolean({ description: 'true when the address was not a contact yet' }),
  },
  { title: 'TrackedEvent' },
);

/** Tracked customer events and revenue. */
export async function eventRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const config = { auth: 'project' as const };
  const tags = ['events'];

  app.post(
    '/events',
    {
      config,
      schema: {
        tags,
        summary: 'Track an event (or up to 100 in an array)',
        operationId: 'trackEvents',
        description:
          'Connects a named action to an email address: `email` and `event` are required; `properties` is free-form; `value` (with an optional ISO 4217 `currency`, and `quantity`) counts as revenue; a value without a currency is kept without one and reported apart (`currency: null`), never converted or added to a currency. An address that is not a contact yet becomes one (subscribed); on a plan with a contact limit, an event that would create a contact past it is refused with 402. Answered once the event is committed. An array of events is validated whole (a bad one refuses all, naming its index) and answered as {data: [...]}.',
        body: TrackEventsBody,
        response: {
          200: Type.Union([Tracked, Type.Object({ data: Type.Array(Tracked) })]),
          ...errors(400, 401, 402),
        },
      },
    },
    async (request) => {
      const results = await trackEvents(ctx, await projectFactsOf(request, ctx), request.body);
      return Array.isArray(request.body) ? { data: results } : results[0];
    },
  );
  app.get(
    '/events',
    {
      config,
      schema: {
        tags,
        summary: 'Tracked events, newest first',
        operationId: 'listEvents',
        querystring: EventsQuery,
        response: { 200: page(EventSchema), ...errors(400, 401) },
      },
    },
    async (request) => listEvents(ctx, projectOf(request), pageOf(request.query)),
  );
  app.get(
    '/reports/revenue',
    {
      config,
      schema: {
        tags,
        summary: 'Revenue: the sum of event values per currency, by day, event, campaign or flow',
        description:
          'One row per group and currency; values tracked without a currency have rows of their own with `currency: null`.',
        operationId: 'getRevenueReport',
        querystring: Type.Object({
          group_by: Type.Optional(
            Type.Enum(['day', 'event', 'campaign', 'flow'], { type: 'string', default: 'day' }),
          ),
          from: Type.Optional(Type.String({ description: 'ISO 8601 date (inclusive)' })),
          to: Type.Optional(Type.String({ description: 'ISO 8601 date (exclusive)' })),
          currency: Type.Optional(Type.String({ description: 'only this ISO 4217 code' })),
        }),
        response: {
          200: Type.Object(
            {
              object: Type.Literal('revenue_report'),
              group_by: Type.String(),
              data: Type.Array(
                Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Null()]), {
                  description:
                    'the group (`day`, `event`, `campaign` or `flow`), `currency` (null for values tracked without one), `revenue`, `events`, `quantity`',
                }),
              ),
            },
            { title: 'RevenueReport' },
          ),
          ...errors(400, 401),
        },
      },
    },
    async (request) => revenueReport(ctx, projectOf(request), request.query),
  );
}
