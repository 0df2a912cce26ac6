import type { Role } from '../../db/schema.ts';
import { ForbiddenError } from '../core/errors.ts';

/** Roles in a project, weakest first: what each may do is written in README.md beside this file. */
export const ROLES: Role[] = ['member', 'admin', 'owner'];
const LABEL: Record<Role, string> = { owner: 'Owner', admin: 'Admin', member: 'Member' };

export function roleLabel(role: Role): string {
  return LABEL[role];
}

export function hasRole(role: Role, needed: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(needed);
}

/** Refuses (403) what needs a stronger role, naming the roles that may do it. */
export function requireRole(role: Role, needed: Role, action = 'This'): void {
  if (hasRole(role, needed)) return;
  const allowed = needed === 'owner' ? 'the Owner role' : 'the Owner or Admin role';
  throw new ForbiddenError(`${action} needs ${allowed} in this project; your role is ${LABEL[role]}`);
}
