import type { Logger } from 'pino';
import { SMTPServer, type SMTPServerAuthentication, type SMTPServerSession } from 'smtp-server';
import type { DomainContext } from '../domain/core/context.ts';
import { AuthenticationError, DomainError } from '../domain/core/errors.ts';
import {
  acceptSubmittedMessage,
  type SubmissionSender,
  submissionSender,
} from '../domain/emails/submission.ts';
import { MAX_MESSAGE_BYTES, MAX_RECIPIENTS } from '../domain/emails/validate.ts';
import type { RequestLogWriter } from '../domain/keys/request-log.ts';
import { countSmtpSession } from '../domain/maintenance/metrics.ts';
import { collectMessage, smtpError, type TlsOptions } from './common.ts';

/** The username to give with a project key (any is accepted); an all-access key needs the project id. */
export const SUBMISSION_USERNAME = 'posthorn';

interface SubmissionUser {
  password: string;
  username: string;
}

/** One line in the key's request log for each submitted message. */
function logSubmission(
  requestLog: RequestLogWriter | undefined,
  session: SMTPServerSession,
  status: number,
  started: number,
) {
  const user = session.user as unknown as SubmissionSender | undefined;
  if (!user || !requestLog) return;
  requestLog.add({
    keyId: user.key.id,
    keyName: user.key.name,
    projectId: user.facts.id,
    method: 'SMTP',
    path: '/smtp/submission',
    status,
    latencyMs: Date.now() - started,
    at: new Date(),
    account: false,
  });
}

/**
 * SMTP submission (RFC 6409): the password is an API key and every message goes through the same
 * send path as POST /v1/emails (checks, suppression, headers, DKIM, statuses; stream transactional).
 * Permanent refusals answer 5xx and temporary ones 4xx, with the reason in the reply text. AUTH is
 * offered only once the connection is encrypted (STARTTLS or the implicit-TLS port), so a client is
 * never invited to send its key in clear; POSTHORN_SMTP_ALLOW_INSECURE_AUTH=1 lifts that for
 * loopback testing.
 */
export function createSubmissionServer(opts: {
  ctx: DomainContext;
  log: Logger;
  tls: TlsOptions;
  secure?: boolean;
  requestLog?: RequestLogWriter;
}): SMTPServer {
  const { ctx, log, requestLog } = opts;
  const logCall = (session: SMTPServerSession, status: number, started: number) =>
    logSubmission(requestLog, session, status, started);
  const insecureAuth = ctx.config.smtpAllowInsecureAuth;
  const server = new SMTPServer({
    name: ctx.config.smtpHost,
    banner: 'Posthorn submission: AUTH with an API key as the password',
    secure: opts.secure ?? false,
    key: opts.tls.key,
    cert: opts.tls.cert,
    size: MAX_MESSAGE_BYTES,
    authMethods: ['PLAIN', 'LOGIN'],
    authOptional: false,
    allowInsecureAuth: insecureAuth,
    logger: false,
    disableReverseLookup: true,
    closeTimeout: 5_000,
    // our replies carry their own enhanced codes (5.7.1 for a policy refusal, not the table's 5.1.1)
    hideENHANCEDSTATUSCODES: true,
    // smtp-server lists AUTH in EHLO before STARTTLS and only then answers it with 538: until the
    // connection is encrypted, this session has no AUTH at all (not listed, not accepted)
    onConnect(session, callback) {
      countSmtpSession('submission');
      if (!session.secure && !insecureAuth) session.disabledCommands = ['AUTH'];
      callback();
    },
    onSecure(_socket, session, callback) {
      session.disabledCommands = undefined;
      callback();
    },
    async onAuth(auth: SMTPServerAuthentication, _session, callback) {
      try {
        const username = auth.username ?? '';
        const password = auth.password ?? '';
        const user = await submissionSender(ctx, username, password);
        // kept so every message re-checks the key: revoking it stops this connection too
        callback(null, { user: { ...user, credentials: { username, password } } as never });
      } catch (err) {
        callback(
          smtpError(err instanceof DomainError ? err : new AuthenticationError('Invalid credentials'), 535),
        );
      }
    },
    async onMailFrom(_address, session, callback) {
      const user = session.user as unknown as { credentials: SubmissionUser } | undefined;
      if (!user) return callback(smtpError(new AuthenticationError('Authentication required'), 530));
      try {
        const fresh = await submissionSender(ctx, user.credentials.username, user.credentials.password);
        Object.assign(session.user as object, fresh);
        callback();
      } catch (err) {
        callback(smtpError(err, 535));
      }
    },
    onRcptTo(_address, session, callback) {
      if (session.envelope.rcptTo.length >= MAX_RECIPIENTS) {
        const err = new Error(`4.5.3 Too many recipients: at most ${MAX_RECIPIENTS} per message`);
        return callback(Object.assign(err, { responseCode: 452 }));
      }
      callback();
    },
    onData(stream, session, callback) {
      const started = Date.now();
      collectMessage(stream, MAX_MESSAGE_BYTES)
        .then(async (collected) => {
          if (collected.tooBig) {
            throw Object.assign(
              new Error(`5.3.4 Message too big: the limit is ${MAX_MESSAGE_BYTES} bytes (40 MB)`),
              { responseCode: 552 },
            );
          }
          const accepted = await acceptSubmittedMessage(ctx, session.user as unknown as SubmissionSender, {
            raw: collected.raw,
            recipients: session.envelope.rcptTo.map((r) => r.address),
            overTls: session.secure,
          });
          logCall(session, 200, started);
          callback(null, `2.0.0 Accepted: queued as ${accepted?.id} (status ${accepted?.status})`);
        })
        .catch((err) => {
          const reply = smtpError(err, 451);
          if (!(err instanceof DomainError) && !('responseCode' in (err as object)))
            log.error({ err }, 'submission failed');
          logCall(session, (reply as { responseCode: number }).responseCode, started);
          callback(reply);
        });
    },
  });
  server.on('error', (err) => log.warn({ err: err.message }, 'submission connection error'));
  return server;
}
