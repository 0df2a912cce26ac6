import type { AbTestColumn } from '../../db/schema.ts';
import { addressOf } from '../../mail/address.ts';
import type { DomainContext } from '../core/context.ts';
import { ValidationError } from '../core/errors.ts';
import { withPreheader } from '../templates/content.ts';
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
  /** The display name of `From` (an A/B variant may give its own). */
  fromName: string | null;
  replyTo: string | null;
}

type AbVariant = AbTestColumn['variants'][number];

/** The fields of a campaign's content an A/B variant may override. */
export interface VariantFields {
  subject: string | null;
  from_name: string | null;
  html: string | null;
  template_id: string | null;
  template_version: number | null;
}

/**
 * The campaign's fields as one A/B variant sends them: the variant's subject, from name and content
 * where it gives them (a variant's HTML replaces a template and the other way round); the rest as
 * the campaign has them. Without a variant, the campaign's own fields.
 */
export function withVariant<T extends VariantFields>(base: T, variant: AbVariant | undefined): T {
  if (!variant) return base;
  const next: T = { ...base };
  if (variant.subject !== undefined) next.subject = variant.subject;
  if (variant.from_name !== undefined) next.from_name = variant.from_name;
  if (variant.html !== undefined) {
    next.html = variant.html;
    next.template_id = null;
    next.template_version = null;
  }
  if (variant.template_id !== undefined) {
    next.template_id = variant.template_id;
    next.template_version = variant.template_version ?? null;
    next.html = null;
  }
  return next;
}

/**
 * The campaign's content and sender: a template campaign takes its version's defaults (`from`,
 * `reply_to`, subject) where the campaign gives none; an inline campaign renders its own HTML.
 * Asked for the campaign as a whole (what the start checks and test sends do), it also makes sure
 * every A/B variant's content resolves, so a variant that could not be sent refuses the start; the
 * writer asks for `only` one variant's (or, with null, the campaign's own).
 */
export async function campaignContent(
  ctx: DomainContext,
  base: CampaignRow,
  only?: { variant: number | null },
): Promise<CampaignContent> {
  if (!only)
    for (const [variant, v] of (base.ab_test?.variants ?? []).entries())
      await campaignContent(ctx, base, { variant }).catch((err) => {
        if (!(err instanceof ValidationError)) throw err;
        throw new ValidationError(`A/B variant ${variant} (${v.name}): ${err.message}`);
      });
  const variant = only?.variant ?? null;
  const campaign = variant === null ? base : withVariant(base, base.ab_test?.variants[variant]);
  // each variant renders from its own cache entry
  const cacheSuffix = `campaign:${campaign.id}@${campaign.updated_at.getTime()}${variant === null ? '' : `#v${variant}`}`;
  if (campaign.template_id === null) {
    if (campaign.html === null || campaign.subject === null || campaign.from_address === null)
      throw new ValidationError('The campaign needs `from`, `subject` and content before it is sent');
    return {
      source: {
        cacheKey: cacheSuffix,
        subject: campaign.subject,
        // the campaign's preheader, hidden at the top of its own HTML (a template carries its own)
        compiled_html: withPreheader(campaign.html, campaign.preheader),
        text_body: null,
        variables: [],
      },
      template: null,
      fromAddress: campaign.from_address,
      fromName: campaign.from_name,
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
      cacheKey: `${version.cacheKey}#${cacheSuffix}`,
      subject: campaign.subject ?? version.subject,
    },
    template: {
      id: version.templateId,
      version: version.version,
      variables: resolveVariables(version.variables, {}),
    },
    fromAddress,
    fromName: campaign.from_name,
    replyTo: campaign.reply_to ?? (version.replyTo ? addressOf(version.replyTo) : null),
  };
}
