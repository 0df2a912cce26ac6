import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type Static, Type } from 'typebox';
import {
  authorizeFromPage,
  openPairingPage,
  pageSession,
  pairingFinishLogin,
  pairingFormToken,
  pairingSignIn,
  pairingSignUp,
} from '../../domain/accounts/pairing-page.ts';
import { denyPairing, pairingScopes, pollPairing, startPairing } from '../../domain/accounts/pairings.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { DomainError, NotFoundError } from '../../domain/core/errors.ts';
import { mailboxAvailability } from '../../domain/mailbox/access.ts';
import { SESSION_COOKIE, sessionMetaOf, setSessionCookie } from '../auth.ts';
import { foreignHostReason } from '../host-check.ts';
import { esc, sendPage, sendPageSecurityHeaders } from '../html.ts';
import { acceptFormBodies } from '../request-checks.ts';
import { errors, Nullable, typed } from '../schemas.ts';
import { appPathOf } from '../web-app.ts';
import { callerOf } from './dashboard-mailbox.ts';
import { termsRoutes } from './terms.ts';

const COOKIE = 'posthorn_pair_session';

/** What the page's forms post: every field is text, and which ones come depends on `step`. */
const PairForm = Type.Object({
  code: Type.Optional(Type.String()),
  step: Type.Optional(Type.String()),
  email: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
  accept_terms: Type.Optional(Type.String()),
  login_code: Type.Optional(Type.String()),
  csrf: Type.Optional(Type.String()),
  scope: Type.Optional(Type.String()),
});

const CreatePairingRequest = Type.Object(
  {
    device_name: Type.Optional(
      Nullable(
        Type.String({
          minLength: 1,
          maxLength: 100,
          description: 'names the key the pairing creates ("CLI on <device_name>"); "a device" when absent',
        }),
      ),
    ),
  },
  { title: 'CreatePairingRequest' },
);

const Pairing = Type.Object(
  {
    object: Type.Literal('pairing'),
    code: Type.String({ description: 'the code the person compares on the page' }),
    verification_url: Type.String({ description: 'the page to open in a browser' }),
    poll_token: Type.String({ description: 'the secret to poll with; keep it to this device' }),
    expires_at: Type.String(),
    interval: Type.Integer({ description: 'seconds to wait between polls' }),
  },
  { title: 'Pairing' },
);

const PairingStatus = Type.Object(
  {
    object: Type.Literal('pairing'),
    status: Type.String({ enum: ['pending', 'authorized', 'expired', 'denied'] }),
    key: Type.Optional(Type.String({ description: 'the new secret key, in the one authorized answer' })),
    key_id: Type.Optional(Nullable(Type.String())),
  },
  { title: 'PairingStatus' },
);

function form(code: string, step: string, inner: string, submit: string, secondary = false): string {
  return `<form method="post" action="/pair"><input type="hidden" name="code" value="${esc(code)}"><input type="hidden" name="step" value="${esc(step)}">${inner}<button type="submit" name="submit" value="${esc(submit)}"${secondary ? ' class="secondary"' : ''}>${esc(submit)}</button></form>`;
}

/**
 * The session tokens the browser presents, in the order they are tried: the page's own cookie (set
 * when the person signed in here), then the dashboard's, so a person already signed in to the
 * dashboard only confirms.
 */
function sessionTokensOf(request: FastifyRequest): string[] {
  const cookies = request.headers.cookie ?? '';
  const tokens = [COOKIE, SESSION_COOKIE].map((name) => {
    const match = new RegExp(`(?:^|;\\s*)${name}=([^;]+)`).exec(cookies);
    return match ? decodeURIComponent(match[1]) : null;
  });
  return [...new Set(tokens.filter((t): t is string => t !== null))];
}

/**
 * The browser side of `posthorn login`: the person checks the code, signs in with an emailed code
 * or creates an account (an unticked terms box they must tick), picks the scope and authorises.
 * The pairing code is carried through every step, so it survives account creation.
 */
export async function pairRoutes(
  instance: FastifyInstance,
  { ctx, devMailbox }: { ctx: DomainContext; devMailbox: boolean },
) {
  const app = typed(instance);
  acceptFormBodies(app);
  // like the other public pages: no script, no other site may frame the authorise button
  app.addHook('onSend', async (_request, reply) => {
    sendPageSecurityHeaders(reply);
  });

  // where its terms box links, under the same policy
  await app.register(termsRoutes, { ctx });

  const render = (reply: FastifyReply, status: number, title: string, body: string) =>
    sendPage(reply, status, title, body, true);
  const { appUrl } = ctx.config;

  async function authorizePage(
    reply: FastifyReply,
    session: { accountId: string; token: string; email: string },
    code: string,
    error = '',
  ) {
    const { accountId } = session;
    // another person's session in this browser: they sign in as themselves instead
    const another = `/pair?code=${encodeURIComponent(code)}&amp;account=another`;
    const who = session.email
      ? `<p class="muted">Signed in as ${esc(session.email)}. <a href="${another}">Use another account</a></p>`
      : '';
    const csrf = pairingFormToken(ctx, session.token, code);
    const projects = await pairingScopes(ctx, accountId);
    const choices = [
      ...projects.map(
        (p, i) =>
          `<label class="check"><input type="radio" name="scope" value="${esc(p.id)}"${i === 0 ? ' checked' : ''}> Project ${esc(p.name)}</label>`,
      ),
      '<label class="check"><input type="radio" name="scope" value="all"> All access (every project, the account API)</label>',
    ].join('');
    return render(
      reply,
      error ? 400 : 200,
      'Authorise the Posthorn CLI',
      `${error ? `<p class="error">${esc(error)}</p>` : ''}${who}<p>Check that your terminal shows this code:</p><p class="code">${esc(code)}</p>
${form(code, 'authorize', `<input type="hidden" name="csrf" value="${csrf}"><p>What may this device reach?</p>${choices}`, 'Authorise')}
${form(code, 'deny', '', 'Deny', true)}`,
    );
  }

  function signInPage(reply: FastifyReply, code: string, error = '') {
    return render(
      reply,
      error ? 400 : 200,
      'Sign in to pair the Posthorn CLI',
      `${error ? `<p class="error">${esc(error)}</p>` : ''}<p>Your terminal shows the code <span class="code">${esc(code)}</span>.</p>
<h2>Sign in</h2>${form(code, 'login_start', '<label>Email <input type="email" name="email" autocomplete="email" required></label>', 'Email me a code')}
<h2>Or create an account</h2>${form(
        code,
        'signup',
        `<label>Name <input type="text" name="name" autocomplete="name" required></label><label>Email <input type="email" name="email" autocomplete="email" required></label><label class="check"><input type="checkbox" name="accept_terms" value="yes"> <span>I accept the <a href="/terms" target="_blank" rel="noopener">terms of service</a></span></label>`,
        'Create account',
      )}`,
    );
  }

  /**
   * In development (no relay: the server keeps its mail in the dev mailbox), where the emailed code
   * is, for a browser that may read the mailbox: a link that opens in a new tab, so the code form
   * stays as it is.
   */
  function mailboxPointer(request: FastifyRequest): string {
    if (foreignHostReason(request, ctx.config, 'The dev mailbox')) return '';
    const caller = callerOf(request, ctx.config.trustProxy);
    if (!mailboxAvailability(ctx.config, devMailbox, caller).available) return '';
    return `<p class="muted">No relay is set up, so this server keeps the mail it sends: <a href="${esc(appPathOf(appUrl))}mailbox" target="_blank" rel="noopener">open the dev mailbox</a> (in a new tab: this form stays here) to read your code.</p>`;
  }

  function codePage(
    request: FastifyRequest,
    reply: FastifyReply,
    code: string,
    email: string,
    note: string,
    error = '',
  ) {
    return render(
      reply,
      error ? 400 : 200,
      'Enter the code from your email',
      `${error ? `<p class="error">${esc(error)}</p>` : ''}<p>${esc(note)}</p>${mailboxPointer(request)}${form(
        code,
        'login_finish',
        `<input type="hidden" name="email" value="${esc(email)}"><label>Code <input type="text" name="login_code" required autocomplete="one-time-code" autocapitalize="characters" spellcheck="false"></label>`,
        'Continue',
      )}`,
    );
  }

  // browser pages, not API operations: kept out of the OpenAPI document
  const browserPage = { hide: true };

  app.get(
    '/pair',
    {
      schema: {
        ...browserPage,
        querystring: Type.Object({
          code: Type.Optional(Type.String()),
          account: Type.Optional(Type.String()),
        }),
      },
    },
    async (request, reply) => {
      const code = request.query.code ?? '';
      let opened: Awaited<ReturnType<typeof openPairingPage>>;
      try {
        opened = await openPairingPage(ctx, code, sessionTokensOf(request));
      } catch (err) {
        return render(
          reply,
          404,
          'Pairing not found',
          `<p>${esc((err as Error).message)}. Run <code>posthorn login</code> again.</p>`,
        );
      }
      if (opened && request.query.account !== 'another') return authorizePage(reply, opened, code);
      return signInPage(reply, code);
    },
  );

  // a post without a body gets the sign-in page's error, like any other incomplete form
  app.post('/pair', { schema: { ...browserPage, body: Nullable(PairForm) } }, async (request, reply) => {
    const body: Static<typeof PairForm> = request.body ?? {};
    const code = body.code ?? '';
    const email = body.email ?? '';
    try {
      switch (body.step) {
        case 'login_start':
          await pairingSignIn(ctx, code, email);
          return codePage(
            request,
            reply,
            code,
            email,
            `If ${email} has an account, a login code is on its way.`,
          );
        case 'signup':
          await pairingSignUp(
            ctx,
            code,
            { email, name: body.name, acceptedTerms: body.accept_terms === 'yes' },
            sessionMetaOf(request),
          );
          return codePage(
            request,
            reply,
            code,
            email,
            `A six-character code is on its way to ${email}: it confirms the address and signs you in.`,
          );
        case 'login_finish': {
          let session: Awaited<ReturnType<typeof pairingFinishLogin>>;
          try {
            session = await pairingFinishLogin(ctx, code, email, body.login_code, sessionMetaOf(request));
          } catch (err) {
            if (err instanceof NotFoundError) throw err; // the pairing itself is gone
            return codePage(
              request,
              reply,
              code,
              email,
              'Enter the code from your email.',
              (err as Error).message,
            );
          }
          reply.header(
            'set-cookie',
            `${COOKIE}=${encodeURIComponent(session.token)}; Path=/pair; HttpOnly; SameSite=Lax`,
          );
          // the same session signs the dashboard in, with the dashboard's own cookie: no second code
          setSessionCookie(reply, appUrl, session.token);
          return authorizePage(reply, { accountId: session.account_id, token: session.token, email }, code);
        }
        case 'authorize': {
          const signedIn = await pageSession(ctx, sessionTokensOf(request));
          if (!signedIn) return signInPage(reply, code, 'Sign in first.');
          const result = await authorizeFromPage(ctx, {
            session: signedIn.token,
            code,
            formToken: body.csrf,
            scope: body.scope,
          });
          if (result.outcome === 'forged')
            return render(
              reply,
              403,
              'Not authorised',
              '<p>This form did not come from the pairing page of your session. Open the link from your terminal again.</p>',
            );
          if (result.outcome === 'refused') return authorizePage(reply, signedIn, code, result.message);
          return render(
            reply,
            200,
            'Authorised',
            `<p>Done: the CLI now holds a key. You can close this window.</p><p><a href="${esc(appPathOf(appUrl))}">Open the dashboard</a>: you are signed in there too.</p>`,
          );
        }
        case 'deny':
          await denyPairing(ctx, code);
          return render(reply, 200, 'Denied', '<p>The pairing was denied; no key was created.</p>');
        default:
          return signInPage(reply, code, 'Unknown step.');
      }
    } catch (err) {
      if (err instanceof DomainError) return signInPage(reply, code, err.message);
      throw err;
    }
  });
}

/** The API half: start a pairing and poll it (no key needed). */
export async function pairingApiRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const tags = ['auth'];
  app.post(
    '/auth/pairings',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'Start a browser pairing (the CLI shows the code and opens verification_url)',
        operationId: 'createPairing',
        body: CreatePairingRequest,
        response: { 200: Pairing, ...errors(400) },
      },
    },
    async (request) => startPairing(ctx, request.body),
  );
  app.get(
    '/auth/pairings/:poll_token',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'Poll a pairing: pending, authorized (with the key, exactly once), expired or denied',
        operationId: 'pollPairing',
        params: Type.Object({
          poll_token: Type.String({ description: 'the `poll_token` from creating the pairing' }),
        }),
        response: { 200: PairingStatus, ...errors(404, 429) },
      },
    },
    async (request) => pollPairing(ctx, request.params.poll_token),
  );
}
