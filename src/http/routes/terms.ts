import type { FastifyInstance } from 'fastify';
import type { DomainContext } from '../../domain/core/context.ts';
import { sendPage } from '../html.ts';

/**
 * `/terms` (at the root, like `/pair` and `/api`), where every "I accept the terms" box links (the dashboard's sign-up, the CLI
 * pairing page): a redirect to the operator's terms (POSTHORN_TERMS_URL), or, when none are set, a
 * page saying so and how to set them. One address, so the pages need not know the setting.
 * Registered by `pairRoutes`, whose page policy it shares.
 */
export async function termsRoutes(app: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  app.get('/terms', { config: { auth: 'none' }, schema: { hide: true } }, async (_request, reply) => {
    const target = ctx.config.termsUrl;
    if (target) return reply.code(302).header('cache-control', 'no-store').header('location', target).send();
    return sendPage(
      reply,
      200,
      'Terms of service',
      '<p>The operator of this Posthorn server has not published terms of service yet: ask them for their terms before you create an account.</p><p class="muted">Running this server? Set <code>POSTHORN_TERMS_URL</code> to the address of your terms, and this link leads there.</p>',
      true,
    );
  });
}
