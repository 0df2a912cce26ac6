import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type Selectable, sql } from 'kysely';
import { Type } from 'typebox';
import type { DomainsTable } from '../../db/schema.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { ValidationError } from '../../domain/core/errors.ts';
import { keysetPage } from '../../domain/core/keyset.ts';
import { createKeyInProject, keysActingInPage, renameKey, revokeKey } from '../../domain/keys/service.ts';
import { createDnsLookup } from '../../domain/sending-domains/dns-lookup.ts';
import { updateDomain } from '../../domain/sending-domains/domain-settings.ts';
import { addDomain, deleteDomain, getDomain, verifyDomain } from '../../domain/sending-domains/domains.ts';
import { authOf, projectFactsOf, projectOf } from '../auth.ts';
import { typed } from '../schemas.ts';
import { ResendRefusal } from './errors.ts';
import { resendDomain } from './present.ts';
import { CursorQuery, IdParams, listOf } from './schemas.ts';

// each operation's role is its /v1 counterpart's (counterparts.ts)
const project = { auth: 'project' as const };

const DomainOptions = {
  open_tracking: Type.Optional(Type.Boolean()),
  click_tracking: Type.Optional(Type.Boolean()),
  tls: Type.Optional(Type.String()),
  capabilities: Type.Optional(
    Type.Object({
      sending: Type.Optional(Type.String()),
      receiving: Type.Optional(Type.String()),
    }),
  ),
  tracking_subdomain: Type.Optional(Type.String()),
};

/** Resend's domain options Posthorn has no place for: refused when they ask for something. */
function checkDomainOptions(body: {
  tls?: string;
  tracking_subdomain?: string;
  capabilities?: { sending?: string };
}) {
  if (body.tls !== undefined && body.tls !== 'opportunistic')
    throw new ValidationError(
      "`tls` may only be opportunistic: Posthorn's direct route requires TLS where the receiver publishes MTA-STS or DANE",
    );
  if (body.tracking_subdomain !== undefined)
    throw new ValidationError(
      '`tracking_subdomain` is not available: tracking links use POSTHORN_PUBLIC_URL',
    );
  if (body.capabilities?.sending === 'disabled')
    throw new ValidationError('`capabilities.sending` cannot be disabled: remove the domain instead');
}

/** Resend's `open_tracking` and `click_tracking`: the sending domain's tracking of transactional mail. */
const trackingOf = (body: { open_tracking?: boolean; click_tracking?: boolean }) => ({
  ...(body.open_tracking !== undefined ? { open_tracking: body.open_tracking } : {}),
  ...(body.click_tracking !== undefined ? { click_tracking: body.click_tracking } : {}),
});

/** Managing keys is for an all-access key (Resend's full access); a project key only uses its project. */
function requireFullAccess(request: FastifyRequest) {
  const auth = authOf(request);
  if (auth.key && auth.key.scope !== 'all_access')
    throw new ResendRefusal(
      401,
      'restricted_api_key',
      "Managing API keys needs an all-access key (Resend's full_access); this project key acts only in its project (Resend's sending_access)",
    );
  return { accountId: auth.accountId };
}

/** Domains and API keys, as Resend's API has them. */
export async function resendDomainRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const dns = createDnsLookup(ctx.config.dnsServers);
  app.post(
    '/domains',
    {
      config: project,
      schema: {
        hide: true,
        body: Type.Object(
          {
            name: Type.String(),
            region: Type.Optional(Type.String()),
            custom_return_path: Type.Optional(Type.String()),
            ...DomainOptions,
          },
          { additionalProperties: true },
        ),
      },
    },
    async (request, reply) => {
      checkDomainOptions(request.body);
      if (request.body.custom_return_path !== undefined)
        throw new ValidationError(
          '`custom_return_path` is not available: Posthorn names the return path itself (see the records)',
        );
      const facts = await projectFactsOf(request, ctx);
      const added = await addDomain(ctx, facts, { domain: request.body.name });
      const tracking = trackingOf(request.body);
      const made = Object.keys(tracking).length ? await updateDomain(ctx, facts, added.id, tracking) : added;
      const { object: _, ...domain } = resendDomain(made);
      return reply.code(201).send(domain);
    },
  );
  app.get(
    '/domains',
    { config: project, schema: { hide: true, querystring: CursorQuery } },
    async (request) => {
      const page = await keysetPage<Selectable<DomainsTable>>(
        ctx.db,
        'domains',
        sql<boolean>`project_id = ${projectOf(request)}`,
        request.query,
      );
      return listOf(
        page.rows.map((d) => ({
          id: d.id,
          name: d.name,
          status: d.status,
          created_at: d.created_at.toISOString(),
          open_tracking: d.open_tracking,
          click_tracking: d.click_tracking,
          capabilities: { sending: 'enabled', receiving: d.inbound_enabled ? 'enabled' : 'disabled' },
        })),
        page.has_more,
      );
    },
  );
  app.get('/domains/:id', { config: project, schema: { hide: true, params: IdParams } }, async (request) =>
    resendDomain(await getDomain(ctx, projectOf(request), request.params.id)),
  );
  resendDomainUpdate(app, ctx);
  app.delete(
    '/domains/:id',
    { config: project, schema: { hide: true, params: IdParams } },
    async (request) => {
      await deleteDomain(ctx, projectOf(request), request.params.id);
      return { object: 'domain', id: request.params.id, deleted: true };
    },
  );
  app.post(
    '/domains/:id/verify',
    { config: project, schema: { hide: true, params: IdParams } },
    async (request) => {
      const checked = await verifyDomain(ctx, dns, projectOf(request), request.params.id);
      return { object: 'domain', id: checked.id };
    },
  );

  resendKeyRoutes(app, ctx);
}

/** domains.update: receiving, and the open and click tracking of mail sent from the domain. */
function resendDomainUpdate(app: ReturnType<typeof typed>, ctx: DomainContext) {
  app.patch(
    '/domains/:id',
    {
      config: project,
      schema: {
        hide: true,
        params: IdParams,
        body: Type.Object(DomainOptions, { additionalProperties: true }),
      },
    },
    async (request) => {
      checkDomainOptions(request.body);
      const receiving = request.body.capabilities?.receiving;
      if (receiving !== undefined && receiving !== 'enabled' && receiving !== 'disabled')
        throw new ValidationError('`capabilities.receiving` must be enabled or disabled');
      const facts = await projectFactsOf(request, ctx);
      const changes = {
        ...trackingOf(request.body),
        ...(receiving === undefined ? {} : { inbound_enabled: receiving === 'enabled' }),
      };
      const updated = await updateDomain(ctx, facts, request.params.id, changes);
      return { object: 'domain', id: updated.id };
    },
  );
}

function resendKeyRoutes(app: ReturnType<typeof typed>, ctx: DomainContext) {
  app.post(
    '/api-keys',
    {
      config: project,
      schema: {
        hide: true,
        body: Type.Object(
          {
            name: Type.String(),
            permission: Type.Optional(Type.String()),
            domain_id: Type.Optional(Type.String()),
          },
          { additionalProperties: true },
        ),
      },
    },
    async (request, reply) => {
      const caller = requireFullAccess(request);
      const { name, permission = 'full_access', domain_id } = request.body;
      if (permission !== 'full_access' && permission !== 'sending_access')
        throw new ValidationError('`permission` must be full_access or sending_access');
      if (domain_id !== undefined)
        throw new ValidationError(
          '`domain_id` is not available: a Posthorn key acts in its whole project; give a domain its own project to keep its keys apart',
        );
      const key = await createKeyInProject(ctx, caller, projectOf(request), {
        name,
        scope: permission === 'full_access' ? 'all_access' : 'project',
      });
      return reply.code(201).send({ id: key.id, token: key.key });
    },
  );
  app.get(
    '/api-keys',
    { config: project, schema: { hide: true, querystring: CursorQuery } },
    async (request) => {
      const page = await keysActingInPage(ctx, requireFullAccess(request), projectOf(request), request.query);
      return listOf(
        page.rows.map((k) => ({
          id: k.id,
          name: k.name,
          created_at: k.created_at,
          last_used_at: k.last_used_at,
        })),
        page.has_more,
      );
    },
  );
  app.patch(
    '/api-keys/:id',
    {
      config: project,
      schema: {
        hide: true,
        params: IdParams,
        body: Type.Object({ name: Type.String() }, { additionalProperties: true }),
      },
    },
    async (request) => {
      const renamed = await renameKey(ctx, requireFullAccess(request), request.params.id, request.body.name);
      return { object: 'api_key', id: renamed.id };
    },
  );
  app.delete(
    '/api-keys/:id',
    { config: project, schema: { hide: true, params: IdParams } },
    async (request) => {
      await revokeKey(ctx, requireFullAccess(request), request.params.id);
      return { object: 'api_key', id: request.params.id, deleted: true };
    },
  );
}
