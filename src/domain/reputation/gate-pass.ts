import type { DomainContext } from '../core/context.ts';
import { ForbiddenError, ValidationError } from '../core/errors.ts';
import { type GateCheck, type GateResult, type GateSender, runGate } from './gate.ts';

/**
 * The bulk-sender gate at the moment a campaign starts (send, schedule, scheduled start) or a flow
 * is activated: its failing checks refuse (400, each named); a project admin (or a key) may go on
 * anyway with a reason, recorded with the failures as they were (`gate_overrides`). An override
 * stands for its campaign or flow from then on (a scheduled campaign overridden when scheduled
 * starts at its time).
 */

export type GateScope = 'campaign' | 'flow';

/** What the gate judges the start of. */
export interface GateTarget {
  scope: GateScope;
  id: string;
  /** `Campaign "Spring sale" cannot be sent`, for the refusal. */
  refusal: string;
}

/** Who asks to go on despite failing checks, and why. */
export interface GateOverride {
  /** `key <id>` or `account <id>`. */
  who: string;
  admin: boolean;
  reason?: string;
}

/** The override recorded for a campaign or flow, the latest, or null. */
export async function gateOverrideOf(ctx: Pick<DomainContext, 'db'>, scope: GateScope, id: string) {
  return (
    (await ctx.db
      .selectFrom('gate_overrides')
      .select(['overridden_by', 'reason', 'failures', 'created_at'])
      .where('scope', '=', scope)
      .where('key', '=', id)
      .orderBy('created_at', 'desc')
      .limit(1)
      .executeTakeFirst()) ?? null
  );
}

export const failuresText = (failures: Pick<GateCheck, 'id' | 'message'>[]) =>
  failures.map((f) => `${f.id}: ${f.message}`).join('; ');

/** Runs the gate for each sender (a flow may send from several) and refuses or records as above. */
export async function passGate(
  ctx: DomainContext,
  projectId: string,
  senders: GateSender[],
  target: GateTarget,
  override?: GateOverride,
): Promise<GateResult[]> {
  const results: GateResult[] = [];
  for (const sender of senders) results.push(await runGate(ctx, sender));
  const failures = results.flatMap((r) => r.checks.filter((c) => !c.ok));
  if (failures.length === 0) return results;
  if (await gateOverrideOf(ctx, target.scope, target.id)) return results;
  const how = target.scope === 'campaign' ? ` (GET /v1/campaigns/${target.id}/checklist shows them)` : '';
  if (!override?.reason?.trim())
    throw new ValidationError(
      `${target.refusal}: it fails the bulk-sender checks Gmail and Yahoo require. ${failuresText(failures)}. Fix each${how}, or a project admin may go on anyway with \`gate_override: {"reason": "..."}\`, which is recorded`,
    );
  if (!override.admin)
    throw new ForbiddenError(
      `${target.refusal}: it fails the bulk-sender checks, and only a project admin may override them. ${failuresText(failures)}`,
    );
  await ctx.db
    .insertInto('gate_overrides')
    .values({
      project_id: projectId,
      scope: target.scope,
      key: target.id,
      overridden_by: override.who,
      reason: override.reason.trim(),
      failures: JSON.stringify(failures.map(({ id, message }) => ({ id, message }))),
    })
    .execute();
  return results;
}
