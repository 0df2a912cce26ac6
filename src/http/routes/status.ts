import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/context.ts';
import { accountStatus, limits, setFooterAddress } from '../../domain/status.ts';
import { projectFactsOf, projectOf } from '../auth.ts';
import { bearerSecurity, errors, Nullable, Uuid } from '../schemas.ts';

const FooterSchema = Type.Object({ address: Type.String(), is_your_own_address: Type.Boolean() });

/** GET /me, GET /limits and the footer address. */
export async function statusRoutes(app: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  app.get(
    '/me',
    {
      config: { auth: 'project' },
      schema: {
        tags: ['project'],
        summary: 'Account status: the project, whether it can send and why not, and the compliance footer',
        security: bearerSecurity,
        response: {
          200: Type.Object({
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
          }),
          ...errors(400, 401, 404, 429),
        },
      },
    },
    async (request) => accountStatus(ctx, await projectFactsOf(request, ctx)),
  );

  app.patch(
    '/me/footer',
    {
      config: { auth: 'project' },
      schema: {
        tags: ['project'],
        summary: 'Set the postal address printed in the compliance footer of marketing and automation mail',
        security: bearerSecurity,
        body: Type.Object({ address: Type.String({ description: 'your full postal address' }) }),
        response: { 200: FooterSchema, ...errors(400, 401, 404) },
      },
    },
    async (request) =>
      setFooterAddress(ctx, projectOf(request), (request.body as { address: string }).address),
  );

  app.get(
    '/limits',
    {
      config: { auth: 'project' },
      schema: {
        tags: ['project'],
        summary: 'Plan and usage: contacts held, messages sent this month, features',
        security: bearerSecurity,
        response: {
          200: Type.Object({
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
          }),
          ...errors(400, 401, 404),
        },
      },
    },
    async (request) => limits(ctx, await projectFactsOf(request, ctx)),
  );
}
