import { domainOf } from '../../mail/address.ts';
import type { DomainContext } from '../core/context.ts';
import { DomainError, refusalText } from '../core/errors.ts';
import { checkFromAddress } from '../emails/send-checks.ts';
import { checkSendingLimits } from '../emails/usage.ts';
import { type ProjectFacts, sendBlockers } from '../plans/project-facts.ts';
import { type GateCheckId, runGate } from '../reputation/gate.ts';
import { gateOverrideOf } from '../reputation/gate-pass.ts';
import { missingVariables } from '../templates/message-checks.ts';
import { countAudience } from './audience.ts';
import { type CampaignRow, findCampaign } from './campaigns.ts';
import { type CampaignContent, campaignContent, campaignMessage, withVariant } from './content.ts';
import { campaignSender, checkStartable, emptyAudience } from './send.ts';

/**
 * GET /campaigns/{id}/checklist: the checks POST /campaigns/{id}/send runs before a campaign starts
 * (send.ts `checkCampaignStart`, through the send checks every stream shares), each run on its own
 * so every problem shows at once instead of the first: the same functions, so an item fails exactly
 * when the send would be refused for it, with the send's own message. `ready` is every item ok.
 */

export type ChecklistItemId =
  | 'status'
  | 'account'
  | 'footer'
  | 'variables'
  | 'content'
  | 'sender'
  | 'audience'
  | 'allowance'
  | 'gate'
  | GateCheckId
  | 'tracking';

/** ok: passes; failing: the send would be refused for it; unchecked: it waits on an item that fails. */
export type ChecklistStatus = 'ok' | 'failing' | 'unchecked';

export interface ChecklistItem {
  id: ChecklistItemId;
  status: ChecklistStatus;
  message: string;
}

const ok = (id: ChecklistItemId, message: string): ChecklistItem => ({ id, status: 'ok', message });
const failing = (id: ChecklistItemId, message: string): ChecklistItem => ({ id, status: 'failing', message });
const unchecked = (id: ChecklistItemId, message: string): ChecklistItem => ({
  id,
  status: 'unchecked',
  message,
});

/** Runs one check: ok with its message, or failing with the refusal the send would give. */
async function attempt(id: ChecklistItemId, check: () => Promise<string> | string): Promise<ChecklistItem> {
  try {
    return ok(id, await check());
  } catch (err) {
    if (err instanceof DomainError) return failing(id, refusalText(err));
    throw err;
  }
}

/** Every required variable without a value, of the campaign's template and of each A/B variant's. */
async function variablesItem(ctx: DomainContext, campaign: CampaignRow): Promise<ChecklistItem> {
  const messages = [
    { label: '', fields: campaign },
    ...(campaign.ab_test?.variants ?? []).map((v, i) => ({
      label: `A/B variant ${i} (${v.name}): `,
      fields: withVariant(campaign, v),
    })),
  ].filter((m) => m.fields.template_id !== null);
  if (messages.length === 0) return ok('variables', 'Inline HTML: no template variables to give');
  const problems: string[] = [];
  let declared = 0;
  for (const { label, fields } of messages) {
    const message = await campaignMessage(ctx, fields).catch((err) => {
      if (err instanceof DomainError) return null;
      throw err;
    });
    if (!message?.template)
      return unchecked('variables', 'Checked once the template is found and has a published version');
    declared += message.template.variables.length;
    const missing = missingVariables(message.template, message.variables);
    if (missing.length > 0)
      problems.push(
        `${label}${missing.map((v) => `\`${v.name}\` (a ${v.type})`).join(', ')} ${
          missing.length === 1 ? 'has' : 'have'
        } no value and no default`,
      );
  }
  if (problems.length > 0)
    return failing(
      'variables',
      `Template variables without a value: ${problems.join('; ')}. Give them in the campaign's template variables (\`variables\`), or a default in the template`,
    );
  return ok(
    'variables',
    declared === 0
      ? 'The template declares no variables'
      : 'Every variable of the template has a value or a default',
  );
}

/**
 * The bulk-sender gate's checks (reputation/gate.ts), once the sender passes: each failing one
 * refuses the send unless an admin's override is recorded, when it shows as ok, saying so.
 */
async function gateItems(
  ctx: DomainContext,
  campaign: CampaignRow,
  content: CampaignContent | null,
): Promise<ChecklistItem[]> {
  if (!content) return [unchecked('gate', 'The bulk-sender checks run once the content and sender pass')];
  const gate = await runGate(ctx, {
    projectId: campaign.project_id,
    stream: 'marketing',
    from: campaignSender(campaign, content),
  });
  if (!gate.applies) return [ok('gate', `Bulk-sender checks not run: ${gate.skipped}`)];
  const override = gate.passed ? null : await gateOverrideOf(ctx, 'campaign', campaign.id);
  return gate.checks.map((c) =>
    c.ok
      ? ok(c.id, c.message)
      : override
        ? ok(c.id, `Overridden by ${override.overridden_by} (${override.reason}): ${c.message}`)
        : failing(c.id, c.message),
  );
}

/** The checklist of a campaign: what /send checks, item by item (see the file's comment). */
export async function campaignChecklist(ctx: DomainContext, facts: ProjectFacts, id: string) {
  const campaign = await findCampaign(ctx, facts.id, id);
  const items: ChecklistItem[] = [];
  items.push(
    await attempt('status', () => {
      checkStartable(campaign);
      return campaign.status === 'scheduled'
        ? 'Scheduled: it can still be sent now'
        : 'A draft: it can be sent or scheduled';
    }),
  );
  const blockers = sendBlockers(facts, 'marketing');
  const blocker = (code: string) => blockers.find((b) => b.code === code);
  const unconfirmed = blocker('email_unconfirmed');
  items.push(
    unconfirmed ? failing('account', unconfirmed.message) : ok('account', 'The account email is confirmed'),
  );
  const footer = blocker('footer_placeholder');
  items.push(
    footer
      ? failing('footer', footer.message)
      : ok('footer', `The footer carries your postal address: ${facts.footer_address}`),
  );

  const variables = await variablesItem(ctx, campaign);
  items.push(variables);
  let content = null as CampaignContent | null;
  if (variables.status === 'failing')
    items.push(unchecked('content', 'Checked once every template variable has a value'));
  else
    items.push(
      await attempt('content', async () => {
        content = await campaignContent(ctx, campaign);
        return content.template
          ? `The subject and template (version ${content.template.version}) render`
          : 'The subject and HTML render';
      }),
    );

  const from = content?.fromAddress ?? campaign.from_address;
  let shared = false;
  const sender =
    from === null
      ? failing('sender', 'The campaign needs a `from` address (or a template that gives one)')
      : await attempt('sender', () => {
          shared = checkFromAddress(ctx, facts, from);
          return shared
            ? `${from} is the shared domain's default address: its daily cap applies`
            : `${from} is on ${domainOf(from)}, a verified domain of this project`;
        });
  items.push(sender);

  const count = await countAudience(ctx, campaign);
  items.push(
    count === 0
      ? failing('audience', emptyAudience(campaign.name, campaign.topic_id).message)
      : ok(
          'audience',
          `${count.toLocaleString('en-US')} ${count === 1 ? 'recipient' : 'recipients'} after suppressions and unsubscribes`,
        ),
  );
  items.push(
    count === 0 || sender.status !== 'ok'
      ? unchecked('allowance', 'Checked once the sender passes and the audience holds someone')
      : await attempt('allowance', async () => {
          await checkSendingLimits(ctx, facts, count, shared ? count : 0);
          return `Sending ${count.toLocaleString('en-US')} now stays within the plan's allowance`;
        }),
  );

  items.push(...(await gateItems(ctx, campaign, sender.status === 'ok' && content ? content : null)));

  const said = (on: boolean) => (on ? 'tracked' : 'not tracked');
  items.push(ok('tracking', `Opens ${said(campaign.track_opens)}, clicks ${said(campaign.track_clicks)}`));
  return {
    object: 'campaign_checklist' as const,
    campaign_id: campaign.id,
    ready: items.every((i) => i.status === 'ok'),
    items,
  };
}
