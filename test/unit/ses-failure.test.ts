import { describe, expect, it } from 'vitest';
import { sesFailure } from '../../src/delivery/ses.ts';

/** An error shaped as the AWS SDK throws them: the service's error name, its fault and HTTP status. */
const awsError = (name: string, message: string, status: number) =>
  Object.assign(new Error(message), {
    name,
    $fault: status >= 500 ? 'server' : 'client',
    $metadata: { httpStatusCode: status },
  });

const SETTING = 'the route "ses" of POSTHORN_ROUTES';

describe("SES's refusals as delivery failures", () => {
  it('bounces a rejected message and blames its recipients, as a 5xx to DATA', () => {
    const e = sesFailure(awsError('MessageRejected', 'Message contains a virus', 400), SETTING);
    expect(e).toMatchObject({ permanent: true, recipientsAtFault: true });
    expect(e.response).toBe('SES rejected the message: MessageRejected: Message contains a virus');
  });

  it("fails without blaming anyone a rejection for an identity not verified (the account's setup)", () => {
    const e = sesFailure(
      awsError(
        'MessageRejected',
        'Email address is not verified. The following identities failed the check in region EU-WEST-1: a@example.org',
        400,
      ),
      SETTING,
    );
    expect(e).toMatchObject({ permanent: true, recipientsAtFault: false });
  });

  it('fails the message on a refused sender or request, as a 5xx to MAIL FROM', () => {
    for (const name of ['MailFromDomainNotVerifiedException', 'BadRequestException'])
      expect(sesFailure(awsError(name, 'no', 400), SETTING)).toMatchObject({
        permanent: true,
        recipientsAtFault: false,
      });
  });

  it('defers throttling, SES errors, lost connections and what is not known', () => {
    for (const err of [
      awsError('TooManyRequestsException', 'Maximum sending rate exceeded', 429),
      awsError('LimitExceededException', 'Daily message quota exceeded', 400),
      awsError('InternalFailure', 'oops', 500),
      awsError('ServiceUnavailable', 'try later', 503),
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }),
      Object.assign(new Error('Request timed out'), { name: 'TimeoutError' }),
      awsError('Unknown', 'Bad Request Exception', 400),
    ]) {
      const e = sesFailure(err, SETTING);
      expect(e.permanent, err.name).toBe(false);
      expect(e.aboutTheSetup, err.name).toBe(false);
      expect(e.response).toMatch(/^SES did not take the message: /);
    }
  });

  it("defers a refusal of the keys or the account, naming the setting to check, so nobody's address is blamed", () => {
    for (const err of [
      awsError('UnrecognizedClientException', 'The security token included in the request is invalid', 403),
      awsError('AccountSuspendedException', 'suspended', 400),
      awsError('SendingPausedException', 'paused', 400),
      awsError('NotFoundException', 'Configuration set <posthorn> does not exist', 404),
    ]) {
      const e = sesFailure(err, SETTING);
      expect(e).toMatchObject({ permanent: false, aboutTheSetup: true });
      expect(e.response).toMatch(/^SES refused Posthorn: .* \(check the route "ses" of POSTHORN_ROUTES\)$/);
    }
  });
});
