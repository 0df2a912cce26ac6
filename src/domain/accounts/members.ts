import type { Role } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { NotFoundError, ValidationError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import { applyMemberChange, membersOf, ROLES, requireMember } from './membership.ts';
import type { Caller } from './projects.ts';

export function checkRole(value: unknown): Role {
  if (!ROLES.includes(value as Role))
    throw new ValidationError('`role` must be "owner", "admin" or "member"');
  return value as Role;
}

/**
 * Gives a member another role (Owners and Admins; only an Owner touches the Owner role; the last
 * Owner cannot be demoted). Returns the member as it now is.
 */
export async function changeMemberRole(
  ctx: DomainContext,
  caller: Caller,
  projectId: string,
  accountId: string,
  input: { role: unknown },
) {
  const role = checkRole(input.role);
  const actorRole = await requireMember(ctx.db, caller.accountId, projectId);
  if (!isUuid(accountId)) throw new NotFoundError('Member');
  const [existing] = await membersOf(ctx.db, projectId, accountId);
  if (!existing) throw new NotFoundError('Member');
  await ctx.db.transaction().execute(async (tx) => {
    await applyMemberChange(tx, {
      projectId,
      actor: { accountId: caller.accountId, role: actorRole },
      accountId,
      role,
    });
  });
  const [member] = await membersOf(ctx.db, projectId, accountId);
  return member;
}

/**
 * Removes a member (Owners and Admins), or lets a member leave; the last Owner cannot leave. The
 * project keys the member made are revoked with the membership unless `keepKeys`.
 */
export async function removeMember(
  ctx: DomainContext,
  caller: Caller,
  projectId: string,
  accountId: string,
  options: { keepKeys?: boolean } = {},
) {
  const actorRole = await requireMember(ctx.db, caller.accountId, projectId);
  if (!isUuid(accountId)) throw new NotFoundError('Member');
  await ctx.db.transaction().execute(async (tx) => {
    await applyMemberChange(tx, {
      projectId,
      actor: { accountId: caller.accountId, role: actorRole },
      accountId,
      role: null,
      keepKeys: options.keepKeys ?? false,
    });
  });
}
