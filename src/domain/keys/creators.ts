import type { Db, Tx } from '../../db/database.ts';

/**
 * API keys by who made them (`api_keys.created_by`, migration 0027). A project key acts for its
 * project whoever made it, so a key made by an Owner or Admin would outlive the maker's place in the
 * project: removing a member revokes the project keys they made there, unless the remover keeps them
 * (`applyMemberChange`). Their all-access keys need no revoking: those act only where their person is
 * Owner or Admin, and stop reaching the project with the membership.
 */

/** The project keys an account made in a project that are not revoked, oldest first. */
export function unrevokedKeysMadeBy(db: Db, projectId: string, accountId: string) {
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('created_by', '=', accountId)
    .where('revoked_at', 'is', null)
    .orderBy('created_at', 'asc')
    .execute();
}

/** Revokes the project keys an account made in a project, in the caller's transaction; how many. */
export async function revokeKeysMadeBy(tx: Tx, projectId: string, accountId: string): Promise<number> {
  const result = await tx
    .updateTable('api_keys')
    .set({ revoked_at: new Date() })
    .where('project_id', '=', projectId)
    .where('created_by', '=', accountId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
