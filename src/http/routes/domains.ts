import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import { createDnsLookup } from '../../domain/sending-domains/dns-lookup.ts';
import { updateDomain } from '../../domain/sending-domains/domain-settings.ts';
import {
  addDomain,
  addProjectDomain,
  deleteDomain,
  getDomain,
  listDomains,
  listProjectDomains,
  rotateDkimKey,
  verifyDomain,
  verifyProjectDomain,
} from '../../domain/sending-domains/domains.ts';
import { authOf, projectFactsOf, projectOf } from '../auth.ts';
import { errors, list, Nullable, ProjectParams, SendingRate, typed } from '../schemas.ts';

const RecordSchema = Type.Object(
  {
    type: Type.String({ enum: ['TXT', 'MX'] }),
    name: Type.String(),
    value: Type.String(),
    priority: Type.Optional(Type.Integer()),
    purpose: Type.String(),
    required: Type.Boolean(),
    status: Type.String({ enum: ['pending', 'verified', 'mismatch', 'missing'] }),
    found: Type.Optional(Type.Array(Type.String(), { description: 'what DNS answered, when it differs' })),
  },
  { title: 'DnsRecord' },
);
const WarmupSchema = Type.Object(
  {
    started_on: Type.String({ description: "the plan's first day (YYYY-MM-DD, UTC)" }),
    schedule: Type.Array(Type.Integer(), { description: 'messages per day from the first day on' }),
    default_schedule: Type.Boolean({ description: 'whether the schedule is the documented default' }),
    day: Type.Integer({ description: "today's day of the plan (1 = the first)" }),
    days: Type.Integer({ description: 'days in the plan; past the last nothing is capped' }),
    finished: Type.Boolean(),
    today: Type.Object({
      date: Type.String(),
      volume: Nullable(Type.Integer({ description: 'messages allowed today (null: the plan is done)' })),
      used: Type.Integer({
        description: 'messages counted today: campaign messages written, other mail handed over',
      }),
    }),
  },
  {
    title: 'Warmup',
    description:
      "the domain's warm-up plan: campaigns send at most the day's volume, engaged contacts first, the rest waiting for the next day; transactional and flow mail is never held but counts",
  },
);
const WarmupRequest = Type.Object(
  {
    enabled: Type.Optional(
      Type.Boolean({ description: 'true starts a plan today (if none); false ends it' }),
    ),
    schedule: Type.Optional(
      Nullable(
        Type.Array(Type.Integer({ minimum: 1 }), {
          minItems: 1,
          maxItems: 365,
          description: 'messages per day from the first day on (null: the default schedule)',
        }),
      ),
    ),
    start_date: Type.Optional(
      Type.String({ description: 'the first day (YYYY-MM-DD, today or earlier): a warm-up begun before' }),
    ),
  },
  { title: 'WarmupRequest', additionalProperties: false },
);
const Tracking = {
  open_tracking: Type.Boolean({
    description:
      'transactional mail sent from the domain carries an open pixel (campaigns and flows keep their own `tracking`)',
  }),
  click_tracking: Type.Boolean({
    description:
      'transactional mail sent from the domain has its links tracked (campaigns and flows keep their own `tracking`)',
  }),
};
const DomainSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('domain'),
    name: Type.String(),
    status: Type.String({ enum: ['pending', 'verified', 'failed'] }),
    records: Type.Array(RecordSchema),
    created_at: Type.String(),
    verified_at: Nullable(Type.String()),
    last_checked_at: Nullable(Type.String()),
    inbound_enabled: Type.Boolean({ description: 'whether mail to this domain is received as inbound mail' }),
    ...Tracking,
    rate: SendingRate,
    warmup: Nullable(WarmupSchema),
  },
  { title: 'Domain' },
);
const DomainList = Type.Object(list(DomainSchema).properties, { title: 'DomainList' });
const CreateDomainRequest = Type.Object(
  {
    domain: Type.String({
      description:
        'the domain you send from, like example.com: a bare public domain name (no scheme, path or IP address) of at most 253 characters; stored lower-cased, in punycode',
    }),
  },
  { title: 'CreateDomainRequest' },
);
const UpdateDomainRequest = Type.Object(
  {
    inbound_enabled: Type.Optional(
      Type.Boolean({
        description: 'receive mail to any address at the domain (turning it on needs a plan with inbound)',
      }),
    ),
    rate: Type.Optional(SendingRate),
    warmup: Type.Optional(WarmupRequest),
    open_tracking: Type.Optional(Tracking.open_tracking),
    click_tracking: Type.Optional(Tracking.click_tracking),
  },
  { title: 'UpdateDomainRequest' },
);
const DomainParams = Type.Object({ id: Type.String({ description: 'domain id' }) });

/** Sending domains: a project key at /domains, an all-access key at /projects/{project_id}/domains. */
export async function domainRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const dns = createDnsLookup(ctx.config.dnsServers);
  const project = { auth: 'project' as const };
  const account = { auth: 'account' as const };
  // adding, changing, checking and removing domains needs Owner or Admin when a session acts
  const manage = { ...project, role: 'admin' as const };
  const manageAccount = { ...account, role: 'admin' as const };
  const tags = ['domains'];

  app.get(
    '/domains',
    {
      config: project,
      schema: {
        tags,
        summary: "List this project's sending domains",
        operationId: 'listDomains',
        response: { 200: DomainList, ...errors(401) },
      },
    },
    async (request) => ({
      data: await listDomains(ctx, projectOf(request)),
    }),
  );
  app.post(
    '/domains',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Add a sending domain; the response lists the DNS records to publish',
        operationId: 'createDomain',
        body: CreateDomainRequest,
        response: { 200: DomainSchema, ...errors(400, 401, 402, 409) },
      },
    },
    async (request) => addDomain(ctx, await projectFactsOf(request, ctx), request.body),
  );
  app.get(
    '/domains/:id',
    {
      config: project,
      schema: {
        tags,
        summary: 'A sending domain with its records',
        operationId: 'getDomain',
        params: DomainParams,
        response: { 200: DomainSchema, ...errors(401, 404) },
      },
    },
    async (request) => getDomain(ctx, projectOf(request), request.params.id),
  );
  app.patch(
    '/domains/:id',
    {
      config: manage,
      schema: {
        tags,
        summary:
          'Turn inbound mail on or off for a verified domain (a plan with inbound), set its sending rate, or its tracking of transactional mail',
        operationId: 'updateDomain',
        description:
          'With `inbound_enabled: true`, mail to any address at the domain is received and listed at GET /v1/inbound once the domain is verified and its MX record points to Posthorn.',
        params: DomainParams,
        body: UpdateDomainRequest,
        response: { 200: DomainSchema, ...errors(400, 401, 402, 404) },
      },
    },
    async (request) => updateDomain(ctx, await projectFactsOf(request, ctx), request.params.id, request.body),
  );
  app.post(
    '/domains/:id/check',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Look the records up in DNS now and update the status',
        operationId: 'checkDomain',
        params: DomainParams,
        response: { 200: DomainSchema, ...errors(401, 404, 503) },
      },
    },
    async (request) => verifyDomain(ctx, dns, projectOf(request), request.params.id),
  );
  app.delete(
    '/domains/:id',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Remove a sending domain and its DKIM key',
        operationId: 'deleteDomain',
        params: DomainParams,
        response: { 204: Type.Null(), ...errors(401, 404) },
      },
    },
    async (request, reply) => {
      await deleteDomain(ctx, projectOf(request), request.params.id);
      return reply.code(204).send();
    },
  );

  app.post(
    '/domains/:id/dkim/rotate',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Rotate the DKIM key: publish the new selector; mail switches to it once a check finds it',
        operationId: 'rotateDomainDkimKey',
        params: DomainParams,
        response: { 200: DomainSchema, ...errors(401, 404) },
      },
    },
    async (request) => rotateDkimKey(ctx, projectOf(request), request.params.id),
  );

  // the account API counterparts name the project in the path
  app.get(
    '/projects/:project_id/domains',
    {
      config: manageAccount,
      schema: {
        tags: ['account API'],
        summary: "List a project's sending domains",
        operationId: 'listProjectDomains',
        params: ProjectParams,
        response: { 200: DomainList, ...errors(401, 404) },
      },
    },
    async (request) => ({
      data: await listProjectDomains(ctx, authOf(request), request.params.project_id),
    }),
  );
  app.post(
    '/projects/:project_id/domains',
    {
      config: manageAccount,
      schema: {
        tags: ['account API'],
        summary: 'Add a sending domain to a project; returns the DNS records to publish',
        operationId: 'createProjectDomain',
        params: ProjectParams,
        body: CreateDomainRequest,
        response: { 200: DomainSchema, ...errors(400, 401, 402, 404, 409) },
      },
    },
    async (request) => addProjectDomain(ctx, authOf(request), request.params.project_id, request.body),
  );
  app.post(
    '/projects/:project_id/domains/:id/check',
    {
      config: manageAccount,
      schema: {
        tags: ['account API'],
        summary: "Check a project's sending domain in DNS now",
        operationId: 'checkProjectDomain',
        params: Type.Object({ ...ProjectParams.properties, ...DomainParams.properties }),
        response: { 200: DomainSchema, ...errors(401, 404, 503) },
      },
    },
    async (request) =>
      verifyProjectDomain(ctx, authOf(request), dns, request.params.project_id, request.params.id),
  );
}
