import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import {
  cancelEnrollment,
  createEnrollment,
  getEnrollment,
  listEnrollments,
} from '../../domain/flows/enrollments.ts';
import { projectOf } from '../auth.ts';
import { errors, Nullable, PageQuery, page, pageOf, Timestamp, typed } from '../schemas.ts';

const STATUSES = ['active', 'completed', 'exited', 'failed', 'cancelled'] as const;

const HistoryEntry = Type.Object(
  {
    step_id: Nullable(Type.String()),
    type: Type.String({
      description: 'the step type (or goal, unsubscribe, cancel for an exit between steps)',
    }),
    at: Timestamp,
    outcome: Type.String({
      description:
        'what happened: sent, already_sent, waited, no_date, event, timeout, branch_<n>, default, updated, queued (webhook), exited, converted, unsubscribed, suppressed, over_allowance, send_refused, quiet_hours (a send waiting for the end of the project quiet hours), not_subscribed_to_topic, failed, cancelled',
    }),
    email_id: Type.Optional(Type.String({ description: 'send steps: the message written' })),
  },
  { title: 'FlowEnrollmentHistoryEntry' },
);

const EnrollmentSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('flow_enrollment'),
    flow_id: Type.String(),
    version: Type.Integer({ description: 'the flow version this enrollment runs on' }),
    contact: Type.Object({ id: Type.String(), email: Type.String() }),
    status: Type.Enum(STATUSES, { type: 'string' }),
    current_step: Nullable(Type.String({ description: 'the step it is at; null once finished' })),
    wake_at: Nullable(Type.String({ format: 'date-time', description: 'when the engine next looks at it' })),
    exit_reason: Nullable(
      Type.String({
        description: 'exit_step, goal, unsubscribed, suppressed, cancelled, or why it failed',
      }),
    ),
    converted_at: Nullable(Type.String({ format: 'date-time', description: 'when it reached the goal' })),
    history: Type.Array(HistoryEntry, { description: 'each step passed, oldest first' }),
    created_at: Timestamp,
    updated_at: Timestamp,
    finished_at: Nullable(Type.String({ format: 'date-time' })),
  },
  { title: 'FlowEnrollment' },
);
const EnrollmentPage = Type.Object(page(EnrollmentSchema).properties, { title: 'FlowEnrollmentPage' });

const FlowParams = Type.Object({ id: Type.String({ description: 'flow id' }) });
const EnrollmentParams = Type.Object({
  ...FlowParams.properties,
  enrollment_id: Type.String({ description: 'enrollment id' }),
});
const EnrollmentQuery = Type.Object({
  ...PageQuery.properties,
  status: Type.Optional(
    Type.Enum(STATUSES, { type: 'string', description: 'only enrollments in this state' }),
  ),
  search: Type.Optional(
    Type.String({
      maxLength: 320,
      description: 'only contacts whose address starts with this (any case; % and _ are literal)',
    }),
  ),
});
const CreateEnrollmentRequest = Type.Object(
  {
    email: Type.String({ minLength: 1, maxLength: 320, description: 'a contact of the project (or its id)' }),
  },
  { title: 'CreateEnrollmentRequest' },
);

/** A flow's enrollments: list, look at one, enrol by hand (the manual trigger), cancel. */
export async function flowEnrollmentRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const config = { auth: 'project' as const };
  const tags = ['flows'];

  app.get(
    '/flows/:id/enrollments',
    {
      config,
      schema: {
        tags,
        summary:
          "List a flow's enrollments, newest first (optionally of one status, or by the contact's address)",
        operationId: 'listFlowEnrollments',
        params: FlowParams,
        querystring: EnrollmentQuery,
        response: { 200: EnrollmentPage, ...errors(400, 401, 404) },
      },
    },
    async (request) => listEnrollments(ctx, projectOf(request), request.params.id, pageOf(request.query)),
  );
  app.post(
    '/flows/:id/enrollments',
    {
      config,
      schema: {
        tags,
        summary:
          'Enrol a contact by hand (the manual trigger; 409 if the flow is not active, the contact unsubscribed, or re-entry refuses)',
        operationId: 'createFlowEnrollment',
        params: FlowParams,
        body: CreateEnrollmentRequest,
        response: { 200: EnrollmentSchema, ...errors(400, 401, 404, 409) },
      },
    },
    async (request) => createEnrollment(ctx, projectOf(request), request.params.id, request.body.email),
  );
  app.get(
    '/flows/:id/enrollments/:enrollment_id',
    {
      config,
      schema: {
        tags,
        summary: 'Get an enrollment with its current step and history',
        operationId: 'getFlowEnrollment',
        params: EnrollmentParams,
        response: { 200: EnrollmentSchema, ...errors(401, 404) },
      },
    },
    async (request) =>
      getEnrollment(ctx, projectOf(request), request.params.id, request.params.enrollment_id),
  );
  app.delete(
    '/flows/:id/enrollments/:enrollment_id',
    {
      config,
      schema: {
        tags,
        summary: 'Cancel an active enrollment: it stops where it is (204; 409 once finished)',
        operationId: 'cancelFlowEnrollment',
        description:
          'The enrollment stays, `cancelled`, with where it stopped in its history: GET /v1/flows/{id}/enrollments/{enrollment_id}.',
        params: EnrollmentParams,
        response: { 204: Type.Null(), ...errors(401, 404, 409) },
      },
    },
    async (request, reply) => {
      await cancelEnrollment(ctx, projectOf(request), request.params.id, request.params.enrollment_id);
      return reply.code(204).send();
    },
  );
}
