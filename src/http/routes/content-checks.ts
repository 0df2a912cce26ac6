import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { campaignContentChecks } from '../../domain/campaigns/content-quality.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { templateContentChecks } from '../../domain/templates/content-checks.ts';
import { projectOf } from '../auth.ts';
import { errors, typed } from '../schemas.ts';

const ContentChecks = Type.Object(
  {
    object: Type.Literal('content_checks'),
    checks: Type.Array(
      Type.Object({
        id: Type.Union(
          ['alt_text', 'image_size', 'html_size', 'links', 'spam_score'].map((id) => Type.Literal(id)),
        ),
        status: Type.Union([Type.Literal('ok'), Type.Literal('warning'), Type.Literal('skipped')]),
        message: Type.String(),
      }),
    ),
  },
  {
    title: 'ContentChecks',
    description:
      'Advice on a message as a recipient gets it: alt text, heavy images, HTML past Gmail’s 102 KB clipping, links that answer an error, SpamAssassin’s offline score where it is installed. Never a refusal.',
  },
);
const Params = Type.Object({ id: Type.String() });

/** Checks a marketer understands, before a template or a campaign is sent (issue 49). */
export async function contentCheckRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const config = { auth: 'project' as const };
  app.get(
    '/templates/:id/checks',
    {
      config,
      schema: {
        tags: ['templates'],
        summary: 'Advice on the template as a recipient gets it (the draft, or a published version)',
        operationId: 'checkTemplateContent',
        params: Params,
        querystring: Type.Object({ version: Type.Optional(Type.Integer({ minimum: 1 })) }),
        response: { 200: ContentChecks, ...errors(400, 401, 404) },
      },
    },
    async (request) =>
      templateContentChecks(ctx, projectOf(request), request.params.id, request.query.version),
  );
  app.get(
    '/campaigns/:id/content-checks',
    {
      config,
      schema: {
        tags: ['campaigns'],
        summary:
          'Advice on the campaign’s message before it is sent (alt text, images, size, links, spam score)',
        operationId: 'checkCampaignContent',
        params: Params,
        response: { 200: ContentChecks, ...errors(400, 401, 404) },
      },
    },
    async (request) => campaignContentChecks(ctx, projectOf(request), request.params.id),
  );
}
