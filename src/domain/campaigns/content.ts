import { addressOf } from '../../mail/address.ts';
import type { DomainContext } from '../core/context.ts';
import { ValidationError } from '../core/errors.ts';
import { type RenderSource, resolveVariables } from '../templates/render.ts';
import { resolveVersions } from '../templates/send.ts';
import type { CampaignRow } from './campaigns.ts';

/** What every recipient's message of a campaign is made from. */
export interface CampaignContent {
  /** Rendered per recipient (Liquid over `contact`): the campaign's subject wins over the template's. */
  source: RenderSource;
  /** The published version the emails record (rendered again at delivery), or null for inline HTML. */
  template: { id: string; version: number; variables: Record<string, unknown> } | null;
  fromAddress: string;
  replyTo: string | null;
}

/**
 * The campaign's content and sender: a template campaign takes its version's defaults (`from`,
 * `reply_to`, subject) where the campaign gives none; an inline campaign renders its own HTML.
 */
export async function campaignContent(ctx: DomainContext, campaign: CampaignRow): Promise<CampaignContent> {
  if (campaign.template_id === null) {
    if (campaign.html === null || campaign.subject === null || campaign.from_address === null)
      throw new ValidationError('The campaign needs `from`, `subject` and content before it is sent');
    return {
      source: {
        cacheKey: `campaign:${campaign.id}@${campaign.updated_at.getTime()}`,
        subject: campaign.subject,
        compiled_html: campaign.html,
        text_body: null,
        variables: [],
      },
      template: null,
      fromAddress: campaign.from_address,
      replyTo: campaign.reply_to,
    };
  }
  const [version] = await resolveVersions(ctx, campaign.project_id, [
    { id: campaign.template_id, version: campaign.template_version ?? undefined },
  ]);
  const fromAddress = campaign.from_address ?? (version.from ? addressOf(version.from) : null);
  if (fromAddress === null)
    throw new ValidationError('The campaign needs a `from` address before it is sent');
  return {
    source: {
      ...version,
      cacheKey: `${version.cacheKey}#campaign:${campaign.id}@${campaign.updated_at.getTime()}`,
      subject: campaign.subject ?? version.subject,
    },
    template: {
      id: version.templateId,
      version: version.version,
      variables: resolveVariables(version.variables, {}),
    },
    fromAddress,
    replyTo: campaign.reply_to ?? (version.replyTo ? addressOf(version.replyTo) : null),
  };
}
