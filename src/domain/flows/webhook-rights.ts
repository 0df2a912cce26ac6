import { sql } from 'kysely';
import type { Db, Tx } from '../../db/database.ts';
import type { Role } from '../../db/schema.ts';
import { hasRole, ROLES, requireRole } from '../accounts/roles.ts';
import { FLOW_WEBHOOK_EVENT, type FlowDefinition } from './definition.ts';

/**
 * A flow's `webhook` steps send contacts' full records to a URL, as a webhook endpoint does, so they
 * need the role endpoints need (Owner or Admin: `manage` in http/routes/webhooks.ts) when a person
 * acts through a dashboard session; keys act in their project as they do for webhooks. Creating,
 * editing or activating a flow that has webhook steps is refused (403) to anyone else.
 *
 * And the rights stay needed while the flow runs: the account that last created, changed or
 * activated a flow's webhook steps is recorded (`flows.webhook_owner_id`). When that account is
 * removed from the project or loses the role (accounts/membership.ts `applyMemberChange`, the one
 * rule of every door, calls `pauseFlowsBeyondRights` in the same transaction), its active flows are
 * paused with the reason in `status_reason`, and their calls not yet delivered are failed: the URL
 * it chose receives nothing more. The engine checks the same before every call it queues
 * (`callableFlows`), so a batch running at that moment makes no call either. Only an Owner or
 * Admin activating the flow again (and becoming its owner) makes it call out again.
 */
export const WEBHOOK_ROLE: Role = 'admin';
const ROLES_WITH_RIGHTS = ROLES.filter((r) => hasRole(r, WEBHOOK_ROLE));

/** Who saves or activates a flow: the account, and its role when a person acts (null for a key). */
export interface FlowActor {
  accountId: string;
  role: Role | null;
}

const firstWebhook = (def: FlowDefinition) => def.steps.findIndex((s) => s.type === 'webhook');

/** Refuses (403, worded as for webhooks) a flow with a webhook step to one without the role. */
export function requireWebhookRights(def: FlowDefinition, actor: FlowActor): void {
  const at = firstWebhook(def);
  if (at < 0 || actor.role === null) return;
  requireRole(
    actor.role,
    WEBHOOK_ROLE,
    `A \`webhook\` step (\`steps[${at}]\`) sends contacts' data out as a webhook does, and like a webhook it`,
  );
}

/** The account a flow's webhook steps answer to once saved or activated by `actor` (null: none). */
export function webhookOwner(def: FlowDefinition, actor: FlowActor): string | null {
  return firstWebhook(def) < 0 ? null : actor.accountId;
}

/**
 * After a membership change: when `accountId` no longer has the role webhook steps need in the
 * project (removed, or given a weaker role), the active flows whose webhook steps it set up are
 * paused with the reason, and their webhook calls not yet delivered are failed. In the caller's
 * transaction. Returns the ids of the flows paused.
 */
export async function pauseFlowsBeyondRights(
  tx: Tx,
  projectId: string,
  accountId: string,
): Promise<string[]> {
  const member = await tx
    .selectFrom('project_members')
    .select('role')
    .where('project_id', '=', projectId)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  if (member && hasRole(member.role, WEBHOOK_ROLE)) return [];
  const account = await tx
    .selectFrom('accounts')
    .select('email')
    .where('id', '=', accountId)
    .executeTakeFirst();
  const who = account?.email ?? `account ${accountId}`;
  const why = member ? 'no longer has the Owner or Admin role' : 'was removed from the project';
  const paused = await tx
    .updateTable('flows')
    .set({
      status: 'paused',
      status_reason: sql<string>`${`Paused: its webhook steps were set up by ${who}, who ${why}; an Owner or Admin can check them and activate it again (POST /v1/flows/`} || id::text || '/activate)'`,
      updated_at: new Date(),
    })
    .where('project_id', '=', projectId)
    .where('webhook_owner_id', '=', accountId)
    .where('status', '=', 'active')
    .returning('id')
    .execute();
  const ids = paused.map((f) => f.id);
  await failPendingCalls(tx, projectId, ids, `flow paused: ${who} ${why}`);
  return ids;
}

/**
 * Of these flows, those whose webhook calls may go now, each row held `for share` until the caller's
 * transaction (an engine batch) commits: active, and their webhook steps' owner still a member with
 * the role (a flow saved before owners were recorded has none and keeps running). A pause that
 * comes after waits for the batch, then fails the calls it queued; an active flow whose owner lost
 * the role without the hook being called is paused here.
 */
export async function callableFlows(tx: Tx, flowIds: string[]): Promise<Set<string>> {
  const { rows } = await sql<{ id: string; project_id: string; owner: string | null; allowed: boolean }>`
    select f.id, f.project_id, f.webhook_owner_id as owner,
           f.webhook_owner_id is null or exists (
             select 1 from project_members m
              where m.project_id = f.project_id and m.account_id = f.webhook_owner_id
                and m.role = any(${ROLES_WITH_RIGHTS}::text[])) as allowed
      from flows f
     where f.id = any(${flowIds}::uuid[]) and f.status = 'active'
     order by f.id
       for share of f`.execute(tx);
  const lost = new Map(rows.filter((r) => !r.allowed).map((r) => [`${r.project_id} ${r.owner}`, r]));
  for (const r of lost.values()) await pauseFlowsBeyondRights(tx, r.project_id, r.owner as string);
  return new Set(rows.filter((r) => r.allowed).map((r) => r.id));
}

/** The flows' webhook calls not delivered yet (first attempts and retries) become `failed`. */
async function failPendingCalls(db: Db | Tx, projectId: string, flowIds: string[], reason: string) {
  if (flowIds.length === 0) return;
  await sql`update webhook_deliveries d
       set status = 'failed', error = ${reason}, next_retry_at = null, updated_at = now()
     where d.endpoint_id in (select id from webhook_endpoints where project_id = ${projectId})
       and d.status = 'pending' and d.event_type = ${FLOW_WEBHOOK_EVENT}
       and d.payload -> 'data' ->> 'flow_id' = any(${flowIds}::text[])`.execute(db);
}
