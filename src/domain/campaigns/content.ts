import type { AbTestColumn, TemplateData } from '../../db/schema.ts';
import { addressOf } from '../../mail/address.ts';
import type { DomainContext } from '../core/context.ts';
import { ValidationError } from '../core/errors.ts';
import {
  checkMessageContent,
  type MessageInput,
  messageSource,
  messageVariables,
} from '../templates/message-checks.ts';
import type { RenderSource, TemplateContact } from '../templates/render.ts';
import { resolveVersions } from '../templates/send.ts';
import type { CampaignRow } from './campaigns.ts';

/** What every recipient's message of a campaign is made from. */
export interface CampaignContent {
  /** Rendered per recipient (Liquid over `contact`): the campaign's subject and preheader win over the template's. */
  source: RenderSource;
  /** The published version the emails record (rendered again at delivery), or null for inline HTML. */
  template: {
    id: string;
    version: number;
    variables: Record<string, unknown>;
    /** The campaign's own preheader, rendered again with the version at delivery. */
    preheader: string | null;
  } | null;
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
  template_variables: Record<string, unknown> | null;
}

/**
 * The campaign's fields as one A/B variant sends them: the variant's subject, from name and content
 * where it gives them (a variant's HTML replaces a template and the other way round; a variant's
 * template comes with its own `variables`, not the campaign's); the rest as the campaign has them.
 * Without a variant, the campaign's own fields.
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
    next.template_variables = null;
  }
  if (variant.template_id !== undefined) {
    next.template_id = variant.template_id;
    next.template_version = variant.template_version ?? null;
    next.template_variables = variant.variables ?? null;
    next.html = null;
  }
  return next;
}

/** What a campaign's message is made of (or one variant's): its own fields, over a template or inline. */
export type CampaignMessageFields = VariantFields & { project_id: string; preheader: string | null };

/**
 * The campaign's (or a variant's) message: its subject, preheader and inline HTML, or its subject
 * and preheader over the published version of its template (the one named, else the latest) with
 * the `variables` given for it.
 */
export async function campaignMessage(ctx: DomainContext, c: CampaignMessageFields): Promise<MessageInput> {
  const template =
    c.template_id === null
      ? null
      : (
          await resolveVersions(ctx, c.project_id, [
            { id: c.template_id, version: c.template_version ?? undefined },
          ])
        )[0];
  return {
    subject: c.subject,
    html: template ? null : c.html,
    preheader: c.preheader,
    template,
    variables: c.template_variables,
  };
}

/**
 * The message checks (templates/message-checks.ts) for a campaign or one of its A/B variants (`at`
 * naming it: `ab_test.variants[1].`): on create and edit, and again before it starts or a test goes.
 */
export async function checkCampaignMessage(ctx: DomainContext, c: CampaignMessageFields, at = '') {
  await checkMessageContent(await campaignMessage(ctx, c), { at, owner: c.project_id });
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
  if (!only) {
    // content saved before these checks existed, or a template published since, is refused now
    await checkCampaignMessage(ctx, base);
    for (const [variant, v] of (base.ab_test?.variants ?? []).entries())
      await checkCampaignMessage(ctx, withVariant(base, v), `ab_test.variants[${variant}].`);
    for (const [variant, v] of (base.ab_test?.variants ?? []).entries())
      await campaignContent(ctx, base, { variant }).catch((err) => {
        if (!(err instanceof ValidationError)) throw err;
        throw new ValidationError(`A/B variant ${variant} (${v.name}): ${err.message}`);
      });
  }
  const variant = only?.variant ?? null;
  const campaign = variant === null ? base : withVariant(base, base.ab_test?.variants[variant]);
  // each variant renders from its own cache entry
  const cacheSuffix = `campaign:${campaign.id}@${campaign.updated_at.getTime()}${variant === null ? '' : `#v${variant}`}`;
  if (campaign.template_id === null) {
    if (campaign.html === null || campaign.subject === null || campaign.from_address === null)
      throw new ValidationError('The campaign needs `from`, `subject` and content before it is sent');
  }
  const message = await campaignMessage(ctx, campaign);
  const version = message.template;
  const fromAddress = campaign.from_address ?? (version?.from ? addressOf(version.from) : null);
  if (fromAddress === null)
    throw new ValidationError('The campaign needs a `from` address before it is sent');
  return {
    // the campaign's subject and preheader win over the template's
    source: messageSource(message, cacheSuffix),
    template: version && {
      id: version.templateId,
      version: version.version,
      variables: messageVariables(message),
      preheader: campaign.preheader,
    },
    fromAddress,
    fromName: campaign.from_name,
    replyTo: campaign.reply_to ?? (version?.replyTo ? addressOf(version.replyTo) : null),
  };
}

/** What a template email of the campaign records to be rendered again when it leaves (null: inline). */
export function templateData(content: CampaignContent, contact: TemplateContact): TemplateData | null {
  const t = content.template;
  if (!t) return null;
  return { variables: t.variables, contact, ...(t.preheader ? { preheader: t.preheader } : {}) };
}
