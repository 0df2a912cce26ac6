import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { Type } from 'typebox';
import { findContact } from '../../domain/audience/contacts.ts';
import { trackEvents } from '../../domain/audience/events.ts';
import type { PropertyValue } from '../../domain/audience/fields.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { NotFoundError, ValidationError } from '../../domain/core/errors.ts';
import { isUuid } from '../../domain/core/ids.ts';
import { projectFactsOf, projectOf } from '../auth.ts';
import { typed } from '../schemas.ts';
import { CursorQuery, listOf } from './schemas.ts';
import { derivedId } from './vocabulary.ts';

/**
 * Events (issue 51) over Posthorn's tracked events (domain/audience/events.ts). Resend's `send`
 * tracks one for a contact; Resend's event definitions are the names Posthorn has tracked (Posthorn
 * needs no definition before an event is sent, so `create`, `update` and `remove` answer 405,
 * unsupported.ts). A name's id is derived from it; `get` takes either. Listed by name.
 */

const project = { auth: 'project' as const };

interface Named {
  name: string;
  created_at: Date;
}

const present = (projectId: string, r: Named) => ({
  id: derivedId(projectId, r.name),
  name: r.name,
  schema: null,
  created_at: r.created_at.toISOString(),
  updated_at: null,
});

/**
 * The project's event names past `start` in name order (`desc` backwards), one index probe each
 * (a skip scan of events_project_name_time), with when each was first tracked.
 */
function namesFrom(projectId: string, start: string | null, desc: boolean) {
  const past = desc ? sql`<` : sql`>`;
  const order = desc ? sql`desc` : sql`asc`;
  const from = start ?? (desc ? null : '');
  const first =
    from === null
      ? sql`(select name from events where project_id = ${projectId} order by name desc limit 1)`
      : sql`(select name from events where project_id = ${projectId} and name ${past} ${from} order by name ${order} limit 1)`;
  return sql<Named>`
    with recursive n(name) as (
      select ${first}
      union all
      select (select e.name from events e where e.project_id = ${projectId} and e.name ${past} n.name
               order by e.name ${order} limit 1)
        from n where n.name is not null
    )
    select n.name, (select min(e.created_at) from events e where e.project_id = ${projectId} and e.name = n.name) as created_at
      from n where n.name is not null`;
}

/** The event name an id or a name stands for, with when it was first tracked. */
async function findName(ctx: DomainContext, projectId: string, identifier: string): Promise<Named> {
  const { rows } = isUuid(identifier)
    ? await sql<Named>`select * from (${namesFrom(projectId, null, false)}) x
        where md5(${projectId}::text || ':' || x.name)::uuid = ${identifier}::uuid limit 1`.execute(ctx.db)
    : await sql<Named>`select ${identifier}::text as name, min(created_at) as created_at from events
        where project_id = ${projectId} and name = ${identifier} having count(*) > 0`.execute(ctx.db);
  if (!rows[0]) throw new NotFoundError('Event');
  return rows[0];
}

async function page(
  ctx: DomainContext,
  projectId: string,
  q: { limit?: number; after?: string; before?: string },
) {
  if (q.after !== undefined && q.before !== undefined)
    throw new ValidationError('Give `after` or `before`, not both');
  const limit = q.limit ?? 20;
  const anchorId = q.after ?? q.before;
  let start: string | null = null;
  if (anchorId !== undefined) {
    try {
      start = (await findName(ctx, projectId, anchorId)).name;
    } catch {
      throw new ValidationError(`\`${q.after ? 'after' : 'before'}\` must be the id of an item of this list`);
    }
  }
  const newer = q.before !== undefined;
  const { rows } =
    await sql<Named>`select * from (${namesFrom(projectId, start, newer)}) x limit ${limit + 1}`.execute(
      ctx.db,
    );
  const shown = rows.slice(0, limit);
  return listOf(
    (newer ? shown.reverse() : shown).map((r) => present(projectId, r)),
    rows.length > limit,
  );
}

export async function resendEventRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  app.post(
    '/events/send',
    {
      config: project,
      schema: {
        hide: true,
        body: Type.Object(
          {
            event: Type.String(),
            contact_id: Type.Optional(Type.String()),
            email: Type.Optional(Type.String()),
            payload: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
          },
          { additionalProperties: true },
        ),
      },
    },
    async (request, reply) => {
      const { event, contact_id, email, payload } = request.body;
      if ((contact_id === undefined) === (email === undefined))
        throw new ValidationError('Give `contact_id` or `email`, one of them');
      const facts = await projectFactsOf(request, ctx);
      const address = email ?? (await findContact(ctx, facts.id, contact_id as string)).email;
      await trackEvents(ctx, facts, {
        email: address,
        event,
        properties: payload as Record<string, PropertyValue> | undefined,
      });
      return reply.code(202).send({ object: 'event', event: event.trim() });
    },
  );
  app.get('/events', { config: project, schema: { hide: true, querystring: CursorQuery } }, async (request) =>
    page(ctx, projectOf(request), request.query),
  );
  app.get(
    '/events/:id',
    { config: project, schema: { hide: true, params: Type.Object({ id: Type.String() }) } },
    async (request) => ({
      object: 'event',
      ...present(projectOf(request), await findName(ctx, projectOf(request), request.params.id)),
    }),
  );
}
