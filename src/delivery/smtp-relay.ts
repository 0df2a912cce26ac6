import { SmtpConnectionPool, type SmtpSendError } from './smtp-pool.ts';
import { DeliveryError, type DeliveryResult, type OutboundMessage, type Transport } from './transport.ts';

/** Hands messages to an SMTP relay over a pool of reused connections. */
export function createSmtpRelayTransport(
  relayUrl: string,
  opts: { maxConnections?: number; timeoutSeconds?: number } = {},
): Transport {
  const url = new URL(relayUrl);
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
        const info = await pool.send({ from: message.from, to: message.to }, message.raw);
        // each refused recipient with its RCPT TO reply
        const refusals = (
          info as {
            rejectedErrors?: {
              recipient: string;
              responseCode?: number;
              response?: string;
              message: string;
            }[];
          }
        ).rejectedErrors;
        return {
          response: info.response,
          recipients: [
            ...info.accepted.map((r) => ({
              recipient: String(r),
              accepted: true,
              final: false, // the relay sends it on
              response: info.response,
            })),
            ...(refusals ?? []).map((e) => ({
              recipient: e.recipient,
              accepted: false,
              final: false,
              responseCode: e.responseCode,
              response: e.response ?? e.message,
            })),
          ],
        };
      } catch (err) {
        const e = err as SmtpSendError;
        const code = e.responseCode;
        throw new DeliveryError(e.message, {
          permanent: code !== undefined && code >= 500,
          responseCode: code,
          response: e.response ?? e.message,
        });
      }
    },
    async close() {
      pool.close();
    },
  };
}
