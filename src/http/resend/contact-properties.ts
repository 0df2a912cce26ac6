import type { FastifyInstance } from 'fastify';
import {
  getPropertyKey,
  listPropertyKeys,
  type PropertyKey,
  removePropertyKey,
} from '../../domain/audience/contact-properties.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { ValidationError } from '../../domain/core/errors.ts';
import { projectOf } from '../auth.ts';
import { typed } from '../schemas.ts';
import { CursorQuery, IdParams, listOf } from './schemas.ts';

/**
 * Resend's contact properties as the keys Posthorn's contacts hold
 * (src/domain/audience/contact-properties.ts). Posthorn's properties are free-form: a key needs no
 * definition, so a property is named by its key (its `id` here), its type is what its values are,
 * and it has no fallback (Liquid's `| default:` gives one where it is used). Defining a key ahead
 * (`create`) and setting a stored fallback (`update`) answer 405 (unsupported.ts); `remove` takes
 * the key off every contact that has it.
 */

const project = { auth: 'project' as const };

const resendProperty = (p: PropertyKey) => ({
  id: p.key,
  key: p.key,
  type: p.type,
  created_at: p.first_seen,
});

export async function resendContactPropertyRoutes(
  instance: FastifyInstance,
  { ctx }: { ctx: DomainContext },
) {
  const app = typed(instance);
  app.get(
    '/contact-properties',
    { config: project, schema: { hide: true, querystring: CursorQuery } },
    async (request) => {
      const q = request.query;
      if (q.after !== undefined && q.before !== undefined)
        throw new ValidationError('Give `after` or `before`, not both');
      const rows = (await listPropertyKeys(ctx, projectOf(request))).map(resendProperty);
      const anchor = q.after ?? q.before;
      const at = anchor === undefined ? -1 : rows.findIndex((r) => r.id === anchor);
      if (anchor !== undefined && at < 0)
        throw new ValidationError(
          `\`${q.after ? 'after' : 'before'}\` must be the id of an item of this list`,
        );
      const limit = q.limit ?? 20;
      const [from, to] = q.before !== undefined ? [Math.max(0, at - limit), at] : [at + 1, at + 1 + limit];
      return listOf(rows.slice(from, to), q.before !== undefined ? from > 0 : to < rows.length);
    },
  );
  app.get(
    '/contact-properties/:id',
    { config: project, schema: { hide: true, params: IdParams } },
    async (request) => ({
      object: 'contact_property',
      ...resendProperty(await getPropertyKey(ctx, projectOf(request), request.params.id)),
    }),
  );
  app.delete(
    '/contact-properties/:id',
    { config: project, schema: { hide: true, params: IdParams } },
    async (request) => {
      const removed = await removePropertyKey(ctx, projectOf(request), request.params.id);
      return { object: 'contact_property', id: removed.key, deleted: true };
    },
  );
}
