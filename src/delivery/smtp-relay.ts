import { SmtpConnectionPool, type SmtpSendError } from './smtp-pool.ts';
import {
  claimantOf,
  DeliveryError,
  type DeliveryResult,
  type OutboundMessage,
  type Transport,
} from './transport.ts';

/** The commands of one message's transaction: a refusal of any of them is about this message. */
const MESSAGE_COMMANDS = new Set(['MAIL FROM', 'RCPT TO', 'DATA']);

/**
 * What a failed hand-over to the relay means for the message. Only a 5xx to RCPT TO (every
 * recipient refused) or to the message itself bounces it, and suppresses its recipients; a 5xx to
 * MAIL FROM fails the message without blaming them. Anything before the message (the login, the
 * greeting, TLS, a lost connection) is the relay's or its configuration's: deferred and retried,
 * so a wrong password in POSTHORN_SMTP_RELAY never bounces and suppresses a whole audience.
 */
export function relayFailure(
  e: SmtpSendError,
  setting = 'POSTHORN_SMTP_RELAY',
): DeliveryError & { aboutTheSetup?: boolean } {
  const code = e.responseCode;
  const response = e.response ?? e.message;
  const aboutTheMessage = e.command !== undefined && MESSAGE_COMMANDS.has(e.command);
  if (code !== undefined && code >= 500 && aboutTheMessage) {
    const recipientsAtFault = e.command !== 'MAIL FROM';
    return new DeliveryError(e.message, { permanent: true, recipientsAtFault, responseCode: code, response });
  }
  // a reply before the message began (AUTH, the greeting, EHLO, STARTTLS) is about Posthorn's setup
  const aboutTheSetup = code !== undefined && !aboutTheMessage;
  const failure = new DeliveryError(e.message, {
    permanent: false,
    notTaken: e.notTaken === true,
    responseCode: code,
    response: aboutTheSetup
      ? `the relay refused Posthorn at ${e.command ?? e.code}: ${response} (check ${setting})`
      : response,
  });
  return Object.assign(failure, { aboutTheSetup });
}

/** Hands messages to an SMTP relay over a pool of reused connections. */
export function createSmtpRelayTransport(
  relayUrl: string,
  opts: {
    maxConnections?: number;
    timeoutSeconds?: number;
    /** Told when the relay refuses Posthorn itself (at most once a minute): the operator's to fix. */
    warn?: (line: string) => void;
    /** The setting named in that warning: POSTHORN_SMTP_RELAY, or a route of POSTHORN_ROUTES. */
    setting?: string;
  } = {},
): Transport {
  const url = new URL(relayUrl);
  let warnedAt = 0;
  // a relay that accepts the connection and then says nothing ends the attempt (deferred, retried)
  const timeoutMs = (opts.timeoutSeconds ?? 60) * 1000;
  const pool = new SmtpConnectionPool(
    {
      host: url.hostname,
      port: Number(url.port) || (url.protocol === 'smtps:' ? 465 : 587),
      secure: url.protocol === 'smtps:',
      auth: url.username
        ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) }
        : undefined,
      // a relay on loopback (tests, a local Postfix) rarely has a certificate for "127.0.0.1"
      tls: { rejectUnauthorized: !['127.0.0.1', 'localhost', '::1'].includes(url.hostname) },
      connectionTimeout: Math.min(10_000, timeoutMs),
      greetingTimeout: Math.min(30_000, timeoutMs),
      socketTimeout: timeoutMs,
    },
    opts.maxConnections ?? 10,
  );
  return {
    name: 'smtp-relay',
    async send(message: OutboundMessage): Promise<DeliveryResult> {
      try {
        const info = await pool.send({ from: message.from, to: message.to }, message.raw, {
          claimant: claimantOf(message),
          onSession: message.onSession,
        });
        return {
          response: info.response,
          recipients: [
            ...info.accepted.map((r) => ({
              recipient: String(r),
              accepted: true,
              final: false, // the relay sends it on
              response: info.response,
            })),
            // each refused recipient with its RCPT TO reply
            ...(info.rejectedErrors ?? []).map((e) => ({
              recipient: String(e.recipient),
              accepted: false,
              final: false,
              responseCode: e.responseCode,
              response: e.response ?? e.message,
            })),
          ],
        };
      } catch (err) {
        const failure = relayFailure(err as SmtpSendError, opts.setting);
        if (failure.aboutTheSetup && opts.warn && Date.now() - warnedAt > 60_000) {
          warnedAt = Date.now();
          opts.warn(`messages are deferred: ${failure.response}`);
        }
        throw failure;
      }
    },
    probe: () => pool.probe(),
    async close() {
      pool.close();
    },
  };
}
