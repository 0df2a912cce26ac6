import { routeView } from '../../delivery/routes/view.ts';
import type { DomainContext } from '../core/context.ts';
import { DomainError, ForbiddenError, NotFoundError, ValidationError } from '../core/errors.ts';
import { type FeedbackResult, recordSesNotification, recordSesSubscription } from './ses-events.ts';
import {
  createSnsVerifier,
  isLoopbackUrl,
  isSnsUrl,
  SnsFormatError,
  SnsSignatureError,
} from './sns-signature.ts';

/** SNS did not take the subscription's confirmation: answered 502, nothing kept, so SNS tries again. */
export class ConfirmationFailedError extends DomainError {
  constructor(message: string) {
    super('confirmation_failed', message);
  }
}

/** No route sends through SES: its feedback has no place here (404). */
class SesNotRoutedError extends NotFoundError {
  constructor() {
    super('SES feedback');
    this.message =
      'No route of POSTHORN_ROUTES sends through Amazon SES (a route of type "ses", or a relay with "tags": "ses"): its feedback is not taken';
  }
}

/**
 * Amazon SES's feedback, as SNS posts it: each message's signature is checked (403 when SNS did
 * not sign it or it changed since), then a notification is recorded on the message it names and a
 * subscription confirmed. One per process: the signing certificates fetched are kept.
 */
export function createSesFeedback(ctx: DomainContext) {
  const testCertPem = ctx.config.snsTestCert;
  const verify = createSnsVerifier({ testCertPem });
  // SubscribeURL is fetched only on SNS's host; with a test certificate, on this machine too
  const trusted = (url: string) => isSnsUrl(url) || (testCertPem !== undefined && isLoopbackUrl(url));

  return async function receiveSesFeedback(body: unknown): Promise<FeedbackResult> {
    if (!routeView(ctx.config).sendsThroughSes) throw new SesNotRoutedError();
    let message: Awaited<ReturnType<typeof verify>>;
    try {
      message = await verify(body);
    } catch (err) {
      if (err instanceof SnsFormatError) throw new ValidationError(`Not an SNS message: ${err.message}`);
      if (err instanceof SnsSignatureError)
        throw new ForbiddenError(`The SNS signature is not valid: ${err.message}`);
      throw err;
    }
    if (message.Type === 'Notification') return recordSesNotification(ctx, message);
    try {
      return await recordSesSubscription(ctx, message, trusted);
    } catch (err) {
      throw new ConfirmationFailedError(
        `The subscription could not be confirmed at its SubscribeURL: ${(err as Error).message}`,
      );
    }
  };
}
