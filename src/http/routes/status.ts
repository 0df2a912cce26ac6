import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import { getLocalTime, setLocalTime } from '../../domain/plans/local-time-settings.ts';
import { accountStatus, limits, type SmtpPorts, setFooterAddress } from '../../domain/plans/project-facts.ts';
import { projectRate, setProjectRate } from '../../domain/shaping/sending-rates.ts';
import { projectFactsOf, projectOf } from '../auth.ts';
import { errors, Nullable, SendingRate, typed, Uuid } from '../schemas.ts';

const FooterSchema = Type.Object(
  {
    address: Type.String({ description: 'the postal address printed in the footer' }),
    is_your_own_address: Type.Boolean({ description: 'false while the placeholder address is in place' }),
  },
  { title: 'ComplianceFooter' },
);

const SetFooterRequest = Type.Object(
  {
    address: Type.String({
      minLength: 10,
      maxLength: 500,
      description: 'your full postal address, 10 to 500 characters (leading and trailing spaces are dropped)',
    }),
  },
  { title: 'SetFooterAddressRequest' },
);

const AccountStatus = Type.Object(
  {
    project: Type.Object({ id: Uuid, name: Type.String(), object: Type.Literal('project') }),
    sending: Type.Object({
      ready: Type.Boolean(),
      email_confirmed: Type.Boolean(),
      verified_domains: Type.Array(Type.String()),
      default_from: Type.String(),
      note: Type.String(),
    }),
    footer: FooterSchema,
    inbound: Type.Object(
      { domain: Type.String(), address: Type.String() },
      { description: 'where to send mail to this project: any address at `domain` works' },
    ),
    smtp: Type.Object(
      {
        host: Type.String({
          description:
            'the host to connect to: POSTHORN_SMTP_HOST, or on a server tried locally (that name localhost or a *.localhost name, which may not resolve) the address the submission server listens on, such as 127.0.0.1',
        }),
        port: Type.Integer({ description: 'STARTTLS submission port' }),
        tls_port: Nullable(Type.Integer({ description: 'implicit-TLS port; null when closed' })),
        certificate: Type.Object(
          {
            self_signed: Type.Boolean({
              description:
                'true when the server presents a certificate it made itself (POSTHORN_TLS_CERT unset): clients refuse it until told to trust it',
            }),
            path: Nullable(
              Type.String({
                description:
                  "on a server tried locally, the self-signed certificate's file on that machine, for a client there to trust; null otherwise",
              }),
            ),
          },
          { description: 'the TLS certificate of STARTTLS and implicit TLS' },
        ),
      },
      { description: 'SMTP submission: username `posthorn`, an API key with sending access as the password' },
    ),
  },
  { title: 'AccountStatus' },
);

const Limits = Type.Object(
  {
    plan: Type.String(),
    plan_name: Type.String(),
    contacts: Type.Object({
      count: Type.Integer(),
      limit: Type.Integer({ description: '0 means unmetered' }),
    }),
    sending: Type.Object({
      this_month: Type.Integer(),
      included_per_month: Nullable(Type.Integer({ description: 'null means unmetered' })),
      remaining: Nullable(Type.Integer({ description: 'null when unmetered' })),
      over_limit: Type.Boolean(),
    }),
    features: Type.Record(Type.String(), Type.Boolean()),
  },
  { title: 'Limits' },
);

/** GET /me, GET /limits and the footer address. */
export async function statusRoutes(
  instance: FastifyInstance,
  { ctx, smtpPorts }: { ctx: DomainContext; smtpPorts?: SmtpPorts },
) {
  const app = typed(instance);

  app.get(
    '/me',
    {
      config: { auth: 'project' },
      schema: {
        tags: ['project'],
        summary: 'Account status: the project, whether it can send and why not, and the compliance footer',
        operationId: 'getAccountStatus',
        response: { 200: AccountStatus, ...errors(400, 401, 404, 429) },
      },
    },
    async (request) => accountStatus(ctx, await projectFactsOf(request, ctx), smtpPorts),
  );

  app.patch(
    '/me/footer',
    {
      config: { auth: 'project', role: 'admin' },
      schema: {
        tags: ['project'],
        summary: 'Set the postal address printed in the compliance footer of marketing and automation mail',
        operationId: 'setFooterAddress',
        body: SetFooterRequest,
        response: { 200: FooterSchema, ...errors(400, 401, 404) },
      },
    },
    async (request) => setFooterAddress(ctx, projectOf(request), request.body.address),
  );

  const SendingRateAnswer = Type.Object(
    { object: Type.Literal('sending_rate'), ...SendingRate.properties },
    { title: 'ProjectSendingRate' },
  );
  app.get(
    '/me/sending-rate',
    {
      config: { auth: 'project' },
      schema: {
        tags: ['project'],
        summary:
          "The project's sending rate for marketing and automation mail (the default of its campaigns)",
        operationId: 'getSendingRate',
        response: { 200: SendingRateAnswer, ...errors(401, 404) },
      },
    },
    async (request) => projectRate(ctx, projectOf(request)),
  );
  app.patch(
    '/me/sending-rate',
    {
      config: { auth: 'project', role: 'admin' },
      schema: {
        tags: ['project'],
        summary:
          'Set the sending rate (messages per second and per hour) of marketing and automation mail; a campaign may override it, transactional mail is never throttled',
        operationId: 'setSendingRate',
        body: SendingRate,
        response: { 200: SendingRateAnswer, ...errors(400, 401, 404) },
      },
    },
    async (request) => setProjectRate(ctx, projectOf(request), request.body),
  );

  const LocalTimeAnswer = Type.Object(
    {
      object: Type.Literal('local_time'),
      time_zone: Type.String({
        description: 'the IANA zone of contacts whose properties.timezone names none',
      }),
      quiet_hours: Nullable(
        Type.Object({
          from: Type.String({ description: 'HH:MM, local' }),
          to: Type.String({ description: 'HH:MM, local; before `from` spans midnight' }),
        }),
      ),
    },
    { title: 'ProjectLocalTime' },
  );
  app.get(
    '/me/local-time',
    {
      config: { auth: 'project' },
      schema: {
        tags: ['project'],
        summary: "The project's time zone and quiet hours for marketing and automation mail",
        operationId: 'getLocalTime',
        response: { 200: LocalTimeAnswer, ...errors(401, 404) },
      },
    },
    async (request) => getLocalTime(ctx, projectOf(request)),
  );
  app.patch(
    '/me/local-time',
    {
      config: { auth: 'project', role: 'admin' },
      schema: {
        tags: ['project'],
        summary:
          'Set the time zone of contacts who name none, and quiet hours in which campaigns and flow sends wait (transactional mail never waits)',
        operationId: 'setLocalTime',
        body: Type.Object(
          {
            time_zone: Type.Optional(
              Type.String({ maxLength: 64, description: 'an IANA zone, such as Europe/Berlin' }),
            ),
            quiet_hours: Type.Optional(
              Nullable(
                Type.Object({
                  from: Type.String({ description: 'HH:MM, 24-hour, local' }),
                  to: Type.String({ description: 'HH:MM; before `from` spans midnight' }),
                }),
              ),
            ),
          },
          { title: 'SetLocalTimeRequest' },
        ),
        response: { 200: LocalTimeAnswer, ...errors(400, 401, 404) },
      },
    },
    async (request) => setLocalTime(ctx, projectOf(request), request.body),
  );

  app.get(
    '/limits',
    {
      config: { auth: 'project' },
      schema: {
        tags: ['project'],
        summary: 'Plan and usage: contacts held, messages sent this month, features',
        operationId: 'getLimits',
        response: { 200: Limits, ...errors(400, 401, 404) },
      },
    },
    async (request) => limits(ctx, await projectFactsOf(request, ctx)),
  );
}
