import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import { dmarcOverview } from '../../domain/dmarc/store.ts';
import { findDomain } from '../../domain/sending-domains/domains.ts';
import { projectOf } from '../auth.ts';
import { errors, Nullable, typed } from '../schemas.ts';

const DmarcSchema = Type.Object(
  {
    object: Type.Literal('domain_dmarc'),
    summary: Type.Object({
      messages: Type.Integer({ description: 'messages the aggregate reports counted' }),
      aligned: Type.Integer({ description: 'of them, those that passed DMARC (DKIM or SPF aligned)' }),
      aligned_rate: Nullable(Type.Number({ description: 'aligned / messages; null with no report yet' })),
      reports: Type.Integer(),
    }),
    sources: Type.Array(
      Type.Object({
        source_ip: Type.String(),
        messages: Type.Integer(),
        aligned: Type.Integer(),
        reporters: Type.Integer({ description: 'how many reporters saw it' }),
      }),
      { description: 'the addresses that sent mail as the domain, the busiest first' },
    ),
    tls: Type.Array(
      Type.Object({ policy_domain: Type.String(), successful: Type.Integer(), failed: Type.Integer() }),
      { description: 'TLS sessions reported, by the policy domain' },
    ),
    reports: Type.Array(
      Type.Object({
        id: Type.String(),
        kind: Type.Enum(['aggregate', 'tls', 'unreadable'], { type: 'string' }),
        reporter: Nullable(Type.String()),
        reporter_email: Nullable(Type.String()),
        report_id: Nullable(Type.String()),
        begin: Nullable(Type.String()),
        end: Nullable(Type.String()),
        messages: Type.Integer({ description: 'messages (aggregate) or sessions (TLS) it counted' }),
        file: Nullable(Type.String()),
        reason: Nullable(Type.String({ description: 'unreadable: why it could not be read (it is kept)' })),
        received_at: Type.String(),
      }),
      { description: 'the latest reports received, newest first' },
    ),
  },
  { title: 'DomainDmarc' },
);

/** GET /domains/{id}/dmarc: what the domain's DMARC aggregate and TLS reports say (issue 34). */
export async function domainDmarcRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  app.get(
    '/domains/:id/dmarc',
    {
      config: { auth: 'project' as const },
      schema: {
        tags: ['domains'],
        summary:
          "What the domain's DMARC aggregate and SMTP TLS reports say: messages and alignment, sending sources, TLS sessions, and the reports received (those that could not be read with the reason)",
        operationId: 'getDomainDmarc',
        params: Type.Object({ id: Type.String({ description: 'domain id' }) }),
        response: { 200: DmarcSchema, ...errors(401, 404) },
      },
    },
    async (request) => {
      const domain = await findDomain(ctx, projectOf(request), request.params.id);
      return dmarcOverview(ctx, domain.id);
    },
  );
}
