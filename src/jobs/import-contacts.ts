import type { Task } from 'graphile-worker';
import { runImport } from '../domain/audience/imports.ts';
import type { DomainContext } from '../domain/core/context.ts';

/** Imports an uploaded contact file (the job carries the import id; the file is in the row). */
export function importContactsTask(ctx: DomainContext): Task<'import_contacts'> {
  return async (payload) => {
    const id = payload.import_id;
    if (id) await runImport(ctx, id);
  };
}
