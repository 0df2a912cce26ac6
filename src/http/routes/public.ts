import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type Static, Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import {
  preferences,
  recordClick,
  recordOpen,
  savePreferences,
  unsubscribe,
} from '../../domain/marketing/engagement.ts';
import { esc, sendPage, sendPageSecurityHeaders } from '../html.ts';
import { preferenceBody, scopeForm } from '../preference-page.ts';
import { acceptFormBodies } from '../request-checks.ts';
import { Nullable, typed } from '../schemas.ts';

/** A 1x1 transparent GIF (43 bytes). */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64');

/**
 * Form fields of the preference page (`topics` with a `topic_<id>` field per switch), and RFC
 * 8058's `List-Unsubscribe=One-Click` (no scope: the email's topic, or all marketing without one).
 */
const UnsubscribeForm = Type.Object({
  scope: Type.Optional(
    Type.Union([
      Type.Literal('all'),
      Type.Literal('list'),
      Type.Literal('resubscribe'),
      Type.Literal('topics'),
    ]),
  ),
  'List-Unsubscribe': Type.Optional(Type.String()),
});

const TokenParams = Type.Object({ token: Type.String() });
const browserPage = { hide: true };
const open = { auth: 'none' as const };

const render = sendPage;

const notFoundPage = (reply: FastifyReply) =>
  render(reply, 404, 'Link not found', '<p>This link is not valid. Copy the whole link from the email.</p>');

const notFound = (reply: FastifyReply) =>
  reply.code(404).header('cache-control', 'no-store').type('text/plain; charset=utf-8').send('Not found');

/** The preference page of a token, with a notice above it (a change just saved); 404 page when not ours. */
async function preferencePage(ctx: DomainContext, reply: FastifyReply, token: string, notice?: string) {
  const prefs = await preferences(ctx, token);
  if (!prefs) return notFoundPage(reply);
  return render(reply, 200, 'Email preferences', preferenceBody(token, prefs, notice));
}

/** Multipart form fields as text: RFC 8058 lets one-click unsubscribes come as multipart/form-data. */
function acceptMultipartForms(app: FastifyInstance) {
  app.addContentTypeParser(
    'multipart/form-data',
    { parseAs: 'buffer', bodyLimit: 64 * 1024 },
    async (request: FastifyRequest, body: Buffer) => {
      const headers = { 'content-type': String(request.headers['content-type']) };
      const fields = await new Response(new Uint8Array(body), { headers }).formData().catch(() => null);
      if (!fields) return {};
      return Object.fromEntries([...fields].filter(([, v]) => typeof v === 'string'));
    },
  );
}

/**
 * The public door of marketing mail, on POSTHORN_PUBLIC_URL and without a key: the unsubscribe
 * link (`/u/{token}`: RFC 8058 one-click POST and the preference page) and tracking (`/t/o/{token}`
 * the open pixel, `/t/c/{token}` a tracked link). Kept out of the OpenAPI document: mail readers
 * reach these, not API clients. A token that is not ours is a 404 and changes nothing.
 */
export async function publicRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  acceptFormBodies(app);
  acceptMultipartForms(app);
  // every answer of this door, pages, errors and redirects alike: none may be framed by another site
  app.addHook('onSend', async (_request, reply) => {
    sendPageSecurityHeaders(reply);
  });

  // a campaign test to a member who is no contact links here (marketing-layer.ts): nothing to change
  const testPage = (reply: FastifyReply) =>
    render(
      reply,
      200,
      'Test message',
      '<p>This was a test of a campaign, sent to a member of the project. Its unsubscribe link does nothing: each real recipient gets a link of their own.</p>',
    );
  app.get('/u/test', { config: open, schema: browserPage }, async (_request, reply) => testPage(reply));
  app.post('/u/test', { config: open, schema: browserPage }, async (_request, reply) => testPage(reply));

  app.post(
    '/u/:token',
    { config: open, schema: { ...browserPage, params: TokenParams, body: Nullable(UnsubscribeForm) } },
    async (request, reply) => {
      const form: Static<typeof UnsubscribeForm> = request.body ?? {};
      const { token } = request.params;
      if (form.scope === 'topics') {
        const saved = await savePreferences(ctx, token, form, { ip: request.ip });
        if (!saved) return notFoundPage(reply);
        return preferencePage(ctx, reply, token, 'Your choices are saved.');
      }
      const done = await unsubscribe(ctx, token, form.scope ?? 'one_click', { ip: request.ip });
      if (!done) return notFoundPage(reply);
      if ('leftTopic' in done)
        return render(
          reply,
          200,
          `Unsubscribed from ${done.leftTopic}`,
          `<p>${esc(done.email)} will no longer receive ${esc(done.leftTopic)} emails. Other emails from this sender still arrive.</p><p><a href="/u/${esc(token)}">Choose what you receive</a></p>${scopeForm(token, 'all', 'Unsubscribe from all marketing emails')}`,
        );
      if ('left' in done)
        return render(
          reply,
          200,
          done.left.length > 1 ? 'Unsubscribed from these lists' : 'Unsubscribed from this list',
          `<p>${esc(done.email)} has left ${done.left.map(esc).join(', ')} and will no longer receive its emails. Other marketing emails from this sender still arrive.</p>${scopeForm(token, 'all', 'Unsubscribe from all marketing emails')}`,
        );
      return done.subscribed
        ? render(reply, 200, 'Subscribed', `<p>${esc(done.email)} will receive these emails again.</p>`)
        : render(
            reply,
            200,
            'Unsubscribed',
            `<p>${esc(done.email)} will no longer receive marketing emails from this sender.</p>${scopeForm(token, 'resubscribe', 'Resubscribe')}`,
          );
    },
  );

  app.get(
    '/u/:token',
    { config: open, schema: { ...browserPage, params: TokenParams } },
    async (request, reply) => preferencePage(ctx, reply, request.params.token),
  );

  app.get(
    '/t/o/:token',
    { config: open, schema: { ...browserPage, params: TokenParams } },
    async (request, reply) => {
      const who = { userAgent: request.headers['user-agent'], method: request.method };
      if (!(await recordOpen(ctx, request.params.token, who))) return notFound(reply);
      return reply.header('cache-control', 'no-store').type('image/gif').send(PIXEL);
    },
  );

  // a wildcard, not `:token`: a click token carries its URL and outgrows the router's parameter limit
  app.get(
    '/t/c/*',
    { config: open, schema: { ...browserPage, params: Type.Object({ '*': Type.String() }) } },
    async (request, reply) => {
      const who = { userAgent: request.headers['user-agent'], method: request.method };
      const url = await recordClick(ctx, request.params['*'], who);
      if (!url) return notFound(reply);
      return reply
        .code(302)
        .header('cache-control', 'no-store')
        .header('referrer-policy', 'no-referrer')
        .header('location', url)
        .send();
    },
  );
}
