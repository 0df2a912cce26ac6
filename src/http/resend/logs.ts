import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import { NotFoundError, ValidationError } from '../../domain/core/errors.ts';
import { projectRequest, projectRequests } from '../../domain/keys/request-log.ts';
import { projectOf } from '../auth.ts';
import { typed } from '../schemas.ts';
import { CursorQuery, listOf } from './schemas.ts';
import { inResendFields, logId, logNumber } from './vocabulary.ts';

/**
 * Logs (issue 51) over Posthorn's request log (domain/keys/request-log.ts): every API request a key
 * made in the project, newest first. Posthorn keeps no bodies and no user agent: `request_body`,
 * `response_body` and `user_agent` are null.
 */

const project = { auth: 'project' as const };

type Entry = { id: string | number; method: string; path: string; status: number; created_at: Date };

const present = (r: Entry) => ({
  id: logId(r.id),
  created_at: r.created_at.toISOString(),
  ...inResendFields('log', { path: r.path, method: r.method, status: r.status }),
  user_agent: null,
});

/** The entry number a cursor names (400 when it names none). */
function cursorNumber(id: string | undefined, field: string): string | undefined {
  if (id === undefined) return undefined;
  const n = logNumber(id);
  if (n === null) throw new ValidationError(`\`${field}\` must be the id of an item of this list`);
  return n;
}

export async function resendLogRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  app.get('/logs', { config: project, schema: { hide: true, querystring: CursorQuery } }, async (request) => {
    const { limit = 20, after, before } = request.query;
    if (after !== undefined && before !== undefined)
      throw new ValidationError('Give `after` or `before`, not both');
    const page = await projectRequests(ctx.db, projectOf(request), {
      limit,
      after: cursorNumber(after, 'after'),
      before: cursorNumber(before, 'before'),
    });
    return listOf(page.rows.map(present), page.has_more);
  });
  app.get(
    '/logs/:id',
    { config: project, schema: { hide: true, params: Type.Object({ id: Type.String() }) } },
    async (request) => {
      const n = logNumber(request.params.id);
      const found = n === null ? undefined : await projectRequest(ctx.db, projectOf(request), n);
      if (!found) throw new NotFoundError('Log');
      return { object: 'log', ...present(found), request_body: null, response_body: null };
    },
  );
}
