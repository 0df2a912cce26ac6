import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import { activateFlow, archiveFlow, pauseFlow } from '../../domain/flows/flow-status.ts';
import {
  createFlow,
  deleteFlow,
  type FlowActor,
  getFlow,
  listFlows,
  updateFlow,
} from '../../domain/flows/flows.ts';
import { authOf, projectFactsOf, projectOf } from '../auth.ts';
import { GateOverrideField, gateOverrideOf } from '../gate-override.ts';
import { OPTIONAL_BODY } from '../openapi.ts';
import { errors, IdParams, Nullable, PageQuery, page, pageOf, Timestamp, typed } from '../schemas.ts';

// The definition has its own checker (domain/flows/definition.ts), whose errors name the exact
// step and field at fault ("`steps[2].next`: no step "x" in this flow"); the schemas give the
// outer shape and document the parts.
const CONDITION_HELP =
  'a condition in the segment language: {"all": [...]} or {"any": [...]} of field, list, event and revenue conditions (as segments take them)';
const FlowCondition = Type.Object(
  {
    all: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
    any: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
  },
  { title: 'FlowCondition', description: CONDITION_HELP },
);
const FlowTrigger = Type.Object(
  {
    type: Type.String({
      maxLength: 40,
      description:
        'contact_created; contact_updated {condition?}; event {event, where?: [{property, op, value}]}; list_joined {list_id}; segment_entered {segment_id}; manual (POST /flows/{id}/enrollments)',
    }),
  },
  {
    title: 'FlowTrigger',
    additionalProperties: true,
    description: 'what enrols a contact (only while the flow is active, and only subscribed contacts)',
  },
);
const FlowStep = Type.Object(
  {
    id: Type.Optional(
      Type.String({
        maxLength: 64,
        description: 'letters, digits, _ and -; step_<n> by position when not given',
      }),
    ),
    type: Type.String({
      maxLength: 40,
      description:
        'send {subject, html | template_id, template_version?, variables?, from?, from_name?, topic_id?}; wait {duration_seconds | until | until_property | window: {from_hour, to_hour, days?}}; wait_for_event {event, where?, timeout_seconds, next, timeout_next}; branch {branches: [{condition, next}], default_next}; update_contact {set_properties?, join_list_id?, leave_list_id?}; webhook {url}; exit',
    }),
    next: Type.Optional(
      Nullable(
        Type.String({
          maxLength: 64,
          description:
            'the step that follows: the next in the array when not given; null ends the enrollment',
        }),
      ),
    ),
    variables: Type.Optional(
      Type.Record(
        Type.String({ maxLength: 64 }),
        Type.Union([Type.String(), Type.Number(), Type.Boolean()]),
        {
          maxProperties: 100,
          description:
            "send with template_id: values for the template's variables (defaults fill the rest; a required variable without one is refused when the flow is saved or activated)",
        },
      ),
    ),
    topic_id: Type.Optional(
      Nullable(
        Type.String({
          maxLength: 100,
          description:
            "send: a topic of the project (GET /v1/topics). Only contacts subscribed to it (by choice or by the topic's default) get the message; the others pass the step without it (counted as the step's `skipped`). Its one-click unsubscribe leaves that topic only",
        }),
      ),
    ),
  },
  {
    title: 'FlowStep',
    additionalProperties: true,
    description:
      "one step; the first step is where an enrollment starts. Durations and timeouts: 1 second to 366 days; at most 100 steps and 20 branches per branch step; a loop must pass through a timed wait. A send's subject and html are Liquid over `contact` (and a template's variables), checked when saved; a webhook step needs the Owner or Admin role, as webhooks do",
  },
);
const FlowReentry = Type.Object(
  {
    policy: Type.String({ maxLength: 20, description: 'once (the default), always, or cooldown' }),
    cooldown_seconds: Type.Optional(
      Type.Integer({ description: 'cooldown: seconds after an enrollment before the next' }),
    ),
  },
  { title: 'FlowReentry', description: 'whether a contact may enter the flow again' },
);

const sender = {
  from: Nullable(
    Type.String({
      maxLength: 400,
      description:
        "the send steps' default sender, on a verified domain (the shared default address when none is given anywhere); `Name <address>` also sets `from_name`",
    }),
  ),
  from_name: Nullable(Type.String({ maxLength: 200, description: "the send steps' default sender name" })),
};
const parts = {
  trigger: FlowTrigger,
  steps: Type.Array(FlowStep, { maxItems: 100 }),
  ...sender,
  reentry: Nullable(FlowReentry),
  goal: Nullable(FlowCondition),
};
const FlowName = Type.String({ minLength: 1, maxLength: 200 });
const CreateFlowRequest = Type.Object(
  {
    name: FlowName,
    status: Type.Optional(
      Type.Enum(['draft', 'active'], {
        type: 'string',
        description:
          'draft (the default), or active: the flow runs at once, after the checks of POST /flows/{id}/activate (nothing is created when one fails)',
      }),
    ),
    trigger: parts.trigger,
    steps: parts.steps,
    from: Type.Optional(parts.from),
    from_name: Type.Optional(parts.from_name),
    reentry: Type.Optional(parts.reentry),
    goal: Type.Optional(parts.goal),
  },
  { title: 'CreateFlowRequest' },
);
const UpdateFlowRequest = Type.Object(
  {
    name: Type.Optional(FlowName),
    trigger: Type.Optional(parts.trigger),
    steps: Type.Optional(parts.steps),
    from: Type.Optional(parts.from),
    from_name: Type.Optional(parts.from_name),
    reentry: Type.Optional(parts.reentry),
    goal: Type.Optional(parts.goal),
  },
  {
    title: 'UpdateFlowRequest',
    description:
      'the parts given replace the current ones; on an active flow (or one with enrollments on its version) the result is a new version',
  },
);

const count = (description: string) => Type.Integer({ description });
const enrollmentCounts = {
  entered: count('enrollments, all versions'),
  active: count('enrollments still running'),
  completed: count('enrollments that reached the end'),
  exited: count('enrollments that left early (exit step, goal, unsubscribed or suppressed)'),
  failed: count('enrollments that failed'),
  cancelled: count('enrollments cancelled'),
  converted: count('enrollments that reached the goal'),
};
const FlowStepStats = Type.Object(
  {
    id: Type.String(),
    type: Type.String(),
    entered: count('enrollments that reached the step'),
    sent: count('messages the next hop accepted'),
    opened: count('messages a person opened'),
    clicked: count('messages a person clicked'),
    exited: count('enrollments that left the flow at this step'),
    skipped: count(
      'a send step for a topic: times an enrollment passed it without the message, not subscribed to the topic (history outcome `not_subscribed_to_topic`)',
    ),
  },
  { title: 'FlowStepStats' },
);
const FlowStats = Type.Object(
  {
    ...enrollmentCounts,
    sent: Type.Optional(count('messages the next hop accepted')),
    opened: Type.Optional(count('messages a person opened (machine opens are not counted)')),
    clicked: Type.Optional(count('messages a person clicked (link scanners are not counted)')),
    steps: Type.Optional(Type.Array(FlowStepStats, { description: 'per step of the current version' })),
  },
  {
    title: 'FlowStats',
    description: 'computed now; list rows give only the enrollment counts, GET /flows/{id} everything',
  },
);
const FlowSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('flow'),
    name: Type.String(),
    status: Type.Enum(['draft', 'active', 'paused', 'archived'], { type: 'string' }),
    status_reason: Nullable(
      Type.String({
        description:
          'why the service paused the flow (the account that set up its webhook steps lost the role they need); null when the status was chosen',
      }),
    ),
    version: Type.Integer({ description: 'the version new enrollments start on' }),
    trigger: FlowTrigger,
    steps: Type.Array(FlowStep, { description: 'normalised: every step has its id and explicit edges' }),
    reentry: FlowReentry,
    goal: Nullable(FlowCondition),
    ...sender,
    stats: FlowStats,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'Flow' },
);
const FlowPage = Type.Object(page(FlowSchema).properties, { title: 'FlowPage' });

const ActivateRequest = Type.Object(
  {
    reason: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1000,
        description: 'why the flow goes on (required when the circuit breaker paused it; recorded)',
      }),
    ),
    gate_override: GateOverrideField,
  },
  { additionalProperties: false, title: 'ActivateRequest' },
);

/** Who acts: the account, and a session's role in the project (null for a key). */
function actorOf(request: FastifyRequest): FlowActor {
  const auth = authOf(request);
  return { accountId: auth.accountId, role: auth.role };
}

/** Flows (journeys): triggers enrol contacts, who pass through sends, waits, branches and more. */
export async function flowRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const config = { auth: 'project' as const };
  const tags = ['flows'];
  const one = (summary: string, operationId: string) => ({ tags, summary, operationId, params: IdParams });

  app.get(
    '/flows',
    {
      config,
      schema: {
        tags,
        summary: 'List flows, newest first',
        operationId: 'listFlows',
        querystring: PageQuery,
        response: { 200: FlowPage, ...errors(400, 401) },
      },
    },
    async (request) => listFlows(ctx, projectOf(request), pageOf(request.query)),
  );
  app.post(
    '/flows',
    {
      config,
      schema: {
        tags,
        summary:
          'Create a flow, a draft or (`status: active`) running at once (its definition, templates, messages, senders and lists are checked now; 403 for a webhook step without the Owner or Admin role)',
        operationId: 'createFlow',
        body: CreateFlowRequest,
        response: { 200: FlowSchema, ...errors(400, 401, 402, 403) },
      },
    },
    async (request) => createFlow(ctx, await projectFactsOf(request, ctx), request.body, actorOf(request)),
  );
  app.get(
    '/flows/:id',
    {
      config,
      schema: {
        ...one('Get a flow with its stats', 'getFlow'),
        response: { 200: FlowSchema, ...errors(401, 404) },
      },
    },
    async (request) => getFlow(ctx, projectOf(request), request.params.id),
  );
  app.patch(
    '/flows/:id',
    {
      config,
      schema: {
        ...one(
          'Edit a flow: in place while no enrollment uses its version, else as a new version (409 once archived)',
          'updateFlow',
        ),
        body: UpdateFlowRequest,
        response: { 200: FlowSchema, ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (request) =>
      updateFlow(ctx, await projectFactsOf(request, ctx), request.params.id, request.body, actorOf(request)),
  );
  app.delete(
    '/flows/:id',
    {
      config,
      schema: {
        ...one('Delete a flow and its enrollments (409 while active: pause it first)', 'deleteFlow'),
        response: { 204: Type.Null(), ...errors(401, 404, 409) },
      },
    },
    async (request, reply) => {
      await deleteFlow(ctx, projectOf(request), request.params.id);
      return reply.code(204).send();
    },
  );
  app.post(
    '/flows/:id/activate',
    {
      config,
      schema: {
        ...one(
          'Activate a draft or paused flow (402 without the plan feature automations, 400 footer placeholder, 403 for a webhook step without the Owner or Admin role, 400 failing bulk-sender checks, which a project admin may override with `gate_override`, 409 if active or archived). A flow the circuit breaker paused (its `status_reason` says why) is activated only by a project admin with a `reason`, which is recorded (400 without one, 403 for a member)',
          'activateFlow',
        ),
        body: ActivateRequest,
        [OPTIONAL_BODY]: true,
        response: { 200: FlowSchema, ...errors(400, 401, 402, 403, 404, 409) },
      },
      // an activation with no body (as before the breaker) is one without a reason
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request) => {
      const actor = actorOf(request);
      const auth = authOf(request);
      return activateFlow(
        ctx,
        await projectFactsOf(request, ctx),
        request.params.id,
        actor,
        {
          who: auth.key ? `key ${auth.key.id}` : `account ${auth.accountId}`,
          admin: auth.session ? auth.role === 'admin' || auth.role === 'owner' : true,
          reason: request.body?.reason,
        },
        gateOverrideOf(request, request.body),
      );
    },
  );
  app.post(
    '/flows/:id/pause',
    {
      config,
      schema: {
        ...one('Pause an active flow: no new enrollments, running ones wait where they are', 'pauseFlow'),
        response: { 200: FlowSchema, ...errors(401, 404, 409) },
      },
    },
    async (request) => pauseFlow(ctx, projectOf(request), request.params.id),
  );
  app.post(
    '/flows/:id/archive',
    {
      config,
      schema: {
        ...one(
          'Archive a draft or paused flow: read-only for good, its running enrollments cancelled (409 while active)',
          'archiveFlow',
        ),
        response: { 200: FlowSchema, ...errors(401, 404, 409) },
      },
    },
    async (request) => archiveFlow(ctx, projectOf(request), request.params.id),
  );
}
