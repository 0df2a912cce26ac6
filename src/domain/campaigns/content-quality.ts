import type { DomainContext } from '../core/context.ts';
import { checkContentQuality } from '../templates/content-checks.ts';
import { renderInPool } from '../templates/render-pool.ts';
import { findCampaign } from './campaigns.ts';
import { campaignContent } from './content.ts';

/**
 * GET /campaigns/{id}/content-checks: the "Before sending" advice on the campaign's message
 * (templates/content-checks.ts), rendered as a recipient without a name or properties would get it.
 * Advice only: what /send checks is the checklist.
 */
export async function campaignContentChecks(ctx: DomainContext, projectId: string, id: string) {
  const campaign = await findCampaign(ctx, projectId, id);
  const content = await campaignContent(ctx, campaign);
  const rendered = await renderInPool(projectId, {
    source: content.source,
    given: content.template?.variables,
    contact: { email: 'reader@example.com', first_name: null, last_name: null, properties: {} },
  });
  return {
    object: 'content_checks' as const,
    checks: await checkContentQuality(ctx, {
      from: content.fromAddress,
      subject: rendered.subject,
      html: rendered.html,
      text: rendered.text,
    }),
  };
}
