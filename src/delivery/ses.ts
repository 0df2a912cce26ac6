import type { SESv2Client } from '@aws-sdk/client-sesv2';
import type { SesRoute } from './routes/config.ts';
import { sesEmailTags } from './routes/tags.ts';
import { DeliveryError, type DeliveryResult, type OutboundMessage, type Transport } from './transport.ts';

/** What the SDK's errors carry: the service's error name, who is at fault and the HTTP status. */
interface SesError {
  name?: string;
  message?: string;
  code?: string;
  $fault?: 'client' | 'server';
  $metadata?: { httpStatusCode?: number };
}

/** Refusals about the account, its keys or its setup: the operator's to fix, never the recipients'. */
const SETUP_ERRORS = new Set([
  'AccountSuspendedException',
  'SendingPausedException',
  'NotFoundException', // the configuration set does not exist
  'AccessDeniedException',
  'AccessDenied',
  'UnrecognizedClientException',
  'InvalidClientTokenId',
  'InvalidSignatureException',
  'SignatureDoesNotMatch',
  'IncompleteSignature',
  'MissingAuthenticationToken',
  'ExpiredTokenException',
]);

/**
 * What a failed SendEmail means for the message, as `relayFailure` says it for a relay:
 * - `MessageRejected` is SES refusing the message itself (a virus, a suppressed address): it
 *   bounces and its recipients are suppressed, as a 5xx to DATA; but a rejection because an
 *   identity is not verified (the sandbox) is the account's, so the message fails and nobody is blamed;
 * - `MailFromDomainNotVerifiedException` and `BadRequestException` refuse the sender or the request:
 *   the message fails, its recipients are not to blame (as a 5xx to MAIL FROM);
 * - throttling, SES's own 5xx, a timeout or a lost connection, and whatever is not known are
 *   temporary: deferred and retried;
 * - a refusal of the keys or the account (suspended, sending paused, no such configuration set) is
 *   temporary too, and named as the setting to check, so a wrong key never bounces an audience.
 */
export function sesFailure(err: unknown, setting: string): DeliveryError & { aboutTheSetup?: boolean } {
  const e = (err ?? {}) as SesError;
  const name = e.name ?? e.code ?? 'Error';
  const status = e.$metadata?.httpStatusCode;
  const said = `${name}${e.message ? `: ${e.message}` : ''}`;
  if (name === 'MessageRejected') {
    const recipientsAtFault = !/not verified/i.test(e.message ?? '');
    return new DeliveryError(said, {
      permanent: true,
      recipientsAtFault,
      responseCode: 554,
      response: `SES rejected the message: ${said}`,
    });
  }
  if (name === 'MailFromDomainNotVerifiedException' || name === 'BadRequestException')
    return new DeliveryError(said, {
      permanent: true,
      recipientsAtFault: false,
      responseCode: 550,
      response: `SES refused the message: ${said}`,
    });
  const aboutTheSetup = SETUP_ERRORS.has(name) || status === 401 || status === 403;
  const failure = new DeliveryError(said, {
    permanent: false,
    // SES answered with an error (throttling, its 5xx, the keys refused), or no connection was made:
    // it did not take the message, so the rule's next route may; a timeout or a lost connection may have
    notTaken:
      (status !== undefined && status >= 400) || /ECONNREFUSED/.test(`${e.code ?? ''} ${e.message ?? ''}`),
    responseCode: status && status >= 400 ? 451 : undefined,
    response: aboutTheSetup
      ? `SES refused Posthorn: ${said} (check ${setting})`
      : `SES did not take the message: ${said}${status ? ` (HTTP ${status})` : ''}`,
  });
  return Object.assign(failure, { aboutTheSetup });
}

/**
 * Hands messages to Amazon SES through its v2 API: SendEmail with the raw bytes as they were
 * signed (`Content.Raw`), the envelope's sender and recipients, the message's provider tags as
 * `EmailTags` and the route's configuration set. SES accepts for all the recipients or none, and
 * sends on: accepted is `final: false`, with SES's MessageId, which its feedback names.
 */
export function createSesTransport(
  route: SesRoute,
  opts: {
    /** Told when SES refuses Posthorn itself (at most once a minute): the operator's to fix. */
    warn?: (line: string) => void;
    /** The setting named in that warning: the route of POSTHORN_ROUTES. */
    setting?: string;
  } = {},
): Transport {
  const setting = opts.setting ?? 'POSTHORN_ROUTES';
  const timeoutMs = route.timeoutSeconds * 1000;
  const agent = { keepAlive: true, maxSockets: route.poolSize };
  // the AWS SDK is loaded with the first message (a server without SES routes never loads it)
  let sdk: Promise<{
    client: SESv2Client;
    SendEmailCommand: typeof import('@aws-sdk/client-sesv2').SendEmailCommand;
  }> | null = null;
  const loadSdk = () =>
    (sdk ??= import('@aws-sdk/client-sesv2').then(
      ({ SESv2Client, SendEmailCommand }) => ({ SendEmailCommand, client: new SESv2Client(clientOptions) }),
      (err) => {
        sdk = null; // a failed load is tried again with the next message (which is deferred meanwhile)
        throw err;
      },
    ));
  const clientOptions = {
    region: route.region,
    credentials: { accessKeyId: route.accessKeyId, secretAccessKey: route.secretAccessKey },
    ...(route.endpoint ? { endpoint: route.endpoint } : {}),
    // one try per attempt: a failure is deferred on POSTHORN_RETRY_SCHEDULE like a relay's
    maxAttempts: 1,
    requestHandler: {
      connectionTimeout: Math.min(10_000, timeoutMs),
      requestTimeout: timeoutMs,
      throwOnRequestTimeout: true,
      httpAgent: agent,
      httpsAgent: agent,
    },
  };
  let warnedAt = 0;
  return {
    name: 'ses',
    async send(message: OutboundMessage): Promise<DeliveryResult> {
      message.onSession?.();
      let messageId: string | undefined;
      try {
        const { client, SendEmailCommand } = await loadSdk();
        const answer = await client.send(
          new SendEmailCommand({
            FromEmailAddress: message.from,
            Destination: { ToAddresses: message.to },
            Content: { Raw: { Data: message.raw } },
            EmailTags: sesEmailTags(message.tags),
            ...(route.configurationSet ? { ConfigurationSetName: route.configurationSet } : {}),
          }),
        );
        messageId = answer.MessageId;
      } catch (err) {
        const failure = sesFailure(err, setting);
        if (failure.aboutTheSetup && opts.warn && Date.now() - warnedAt > 60_000) {
          warnedAt = Date.now();
          opts.warn(`messages are deferred: ${failure.response}`);
        }
        throw failure;
      }
      const response = `SES accepted the message: MessageId ${messageId ?? '(none given)'}`;
      return {
        response,
        ...(messageId ? { providerMessageId: messageId } : {}),
        recipients: message.to.map((recipient) => ({ recipient, accepted: true, final: false, response })),
      };
    },
    async close() {
      if (sdk) (await sdk).client.destroy();
    },
  };
}
