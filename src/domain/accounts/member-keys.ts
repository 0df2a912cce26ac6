import type { DomainContext } from '../core/context.ts';
import { NotFoundError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import { unrevokedKeysMadeBy } from '../keys/creators.ts';
import { type PresentedKey, presentKey } from '../keys/service.ts';
import { membersOf, requireMember, requireRole } from './membership.ts';
import type { Caller } from './projects.ts';

/**
 * The project keys a member made in the project that removing them would revoke (those not revoked
 * yet), for the removal's confirmation. Owners and Admins may ask about anyone; a member about
 * themselves (before leaving). Another project, or someone not a member, is 404.
 */
export async function keysRevokedWithMember(
  ctx: Pick<DomainContext, 'db'>,
  caller: Caller,
  projectId: string,
  accountId: string,
): Promise<PresentedKey[]> {
  const callerRole = await requireMember(ctx.db, caller.accountId, projectId);
  if (!isUuid(accountId)) throw new NotFoundError('Member');
  if (accountId !== caller.accountId) requireRole(callerRole, 'admin', "Seeing another member's keys");
  const [member] = await membersOf(ctx.db, projectId, accountId);
  if (!member) throw new NotFoundError('Member');
  return (await unrevokedKeysMadeBy(ctx.db, projectId, accountId)).map((row) => presentKey(row));
}
