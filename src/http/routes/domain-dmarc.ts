import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import { dmarcOverview } from '../../domain/dmarc/overview.ts';
import { labelSource, removeLabel } from '../../domain/dmarc/sources.ts';
import { findDomain } from '../../domain/sending-domains/domains.ts';
import { projectOf } from '../auth.ts';
import { errors, typed } from '../schemas.ts';
import { DmarcSchema, SourceLabelSchema } from './domain-dmarc-schemas.ts';

/**
 * What a domain's DMARC aggregate and TLS reports say (issue 34), and the labels a person gives
 * the sources that send as it.
 */
export async function domainDmarcRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const tags = ['domains'];
  const params = Type.Object({ id: Type.String({ description: 'domain id' }) });
  app.get(
    '/domains/:id/dmarc',
    {
      config: { auth: 'project' as const },
      schema: {
        tags,
        summary:
          "What the domain's DMARC aggregate and SMTP TLS reports say: volume and alignment by day, sources grouped as Posthorn's own, labelled and unknown, TLS sessions and failures, the policy coach, and the reports received",
        operationId: 'getDomainDmarc',
        params,
        querystring: Type.Object({
          days: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: 365,
              default: 30,
              description: 'how many days of reports, up to the latest one (default 30)',
            }),
          ),
        }),
        response: { 200: DmarcSchema, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const domain = await findDomain(ctx, projectOf(request), request.params.id);
      return dmarcOverview(ctx, domain, request.query.days ?? 30);
    },
  );
  app.put(
    '/domains/:id/dmarc/labels',
    {
      config: { auth: 'project' as const, role: 'admin' as const },
      schema: {
        tags,
        summary: 'Name an address or network that sends as the domain (for example "our CRM")',
        description:
          'Its mail counts as a known source: it leaves the unknown ones, raises no `dmarc.unknown_source` event, and counts toward the policy coach. Labelling the same address or network again renames it.',
        operationId: 'labelDmarcSource',
        params,
        body: Type.Object(
          {
            source: Type.String({ description: 'an IP address or a network: 203.0.113.7, 203.0.113.0/24' }),
            label: Type.String({ description: 'what it is, 1 to 100 characters' }),
          },
          { additionalProperties: false },
        ),
        response: { 200: SourceLabelSchema, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const domain = await findDomain(ctx, projectOf(request), request.params.id);
      return labelSource(ctx, domain.id, request.body);
    },
  );
  app.delete(
    '/domains/:id/dmarc/labels/:label_id',
    {
      config: { auth: 'project' as const, role: 'admin' as const },
      schema: {
        tags,
        summary: "Remove a source's label (its mail is unknown again)",
        operationId: 'removeDmarcLabel',
        params: Type.Object({ id: Type.String({ description: 'domain id' }), label_id: Type.String() }),
        response: { 204: Type.Null(), ...errors(401, 404) },
      },
    },
    async (request, reply) => {
      const domain = await findDomain(ctx, projectOf(request), request.params.id);
      await removeLabel(ctx, domain.id, request.params.label_id);
      return reply.code(204).send();
    },
  );
}
