import { describe, expect, it } from 'vitest';
import { withSimulator } from '../../src/delivery/simulator.ts';
import { DeliveryError, type DeliveryResult, type Transport } from '../../src/delivery/transport.ts';
import { applyFailure, applyResult, newOutcome } from '../../src/domain/sending/delivery-outcomes.ts';

/** A relay (final = false) or mailbox (final = true) stand-in that accepts all but `refuse`. */
function hop(final: boolean, refuse: Record<string, [number, string]> = {}): Transport {
  return {
    name: 'stand-in',
    async send(message): Promise<DeliveryResult> {
      return {
        response: '250 ok',
        recipients: message.to.map((recipient) =>
          refuse[recipient]
            ? {
                recipient,
                accepted: false,
                final,
                responseCode: refuse[recipient][0],
                response: refuse[recipient][1],
              }
            : { recipient, accepted: true, final, response: '250 ok' },
        ),
      };
    },
    async close() {},
  };
}

async function outcomeFor(transport: Transport, to: string[], attempt = 1) {
  const outcome = newOutcome('e1');
  const result = await withSimulator(transport).send({
    from: 'b@x.test',
    to,
    raw: Buffer.from(''),
    messageId: '<m>',
    attempt,
    tags: { email: 'e1', project: null, stream: 'transactional' },
  });
  applyResult(outcome, result);
  return outcome;
}

describe('what a delivery attempt makes of a message', () => {
  it('is sent through a relay and delivered into the mailbox, whose acceptance is final', async () => {
    expect((await outcomeFor(hop(false), ['a@example.org'])).status).toBe('sent');
    const mailbox = await outcomeFor(hop(true), ['a@example.org']);
    expect(mailbox.status).toBe('delivered');
    expect(mailbox.events).toEqual([
      { type: 'delivered', recipient: 'a@example.org', detail: { response: '250 ok' } },
    ]);
  });

  it('records each refused recipient: a 5xx bounces and suppresses, a 4xx defers the message for a retry', async () => {
    const outcome = await outcomeFor(
      hop(false, { 'gone@example.org': [550, '550 no such user'], 'full@example.org': [452, '452 full'] }),
      ['a@example.org', 'gone@example.org', 'full@example.org'],
    );
    // one recipient is still to be tried: the message is deferred (the retry goes to that one alone)
    expect(outcome.status).toBe('deferred');
    expect(outcome.events.slice(1)).toEqual([
      {
        type: 'bounced',
        recipient: 'gone@example.org',
        detail: { response: '550 no such user', bounce_type: 'hard' },
      },
      { type: 'deferred', recipient: 'full@example.org', detail: { response: '452 full' } },
    ]);
    expect(outcome.suppress).toEqual([
      { email: 'gone@example.org', reason: 'hard_bounce', detail: '550 no such user' },
    ]);
  });

  it('is sent when every recipient was answered for good, some taken and some bounced', async () => {
    const outcome = await outcomeFor(hop(false, { 'gone@example.org': [550, '550 no such user'] }), [
      'a@example.org',
      'gone@example.org',
    ]);
    expect(outcome.status).toBe('sent');
  });

  it('keeps the shortest wait a deferring hop named for the next try', () => {
    const outcome = newOutcome('e1');
    const deferred = (recipient: string, retryAfterMs?: number) => ({
      recipient,
      accepted: false,
      final: true,
      responseCode: 451,
      response: '451 4.7.1 greylisted',
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    });
    applyResult(outcome, {
      response: '',
      recipients: [deferred('a@x.org', 900_000), deferred('b@y.org', 300_000)],
    });
    expect(outcome).toMatchObject({ status: 'deferred', retryAfterMs: 300_000 });
    const plain = newOutcome('e2');
    applyResult(plain, { response: '', recipients: [deferred('c@z.org')] });
    expect(plain.retryAfterMs).toBeUndefined();
  });

  it('does not suppress a recipient whose server refused the sender or the content (a block)', async () => {
    const outcome = newOutcome('e1');
    applyResult(outcome, {
      response: '',
      recipients: [
        {
          recipient: 'a@example.org',
          accepted: false,
          final: true,
          responseCode: 554,
          response: '554 5.7.1 message refused as spam',
          bounceType: 'block',
          via: { mx: 'mx.example.org', address: '127.0.0.2', source: null, tls: 'TLSv1.3' },
        },
      ],
    });
    expect(outcome.status).toBe('bounced');
    expect(outcome.events).toEqual([
      {
        type: 'bounced',
        recipient: 'a@example.org',
        detail: {
          response: '554 5.7.1 message refused as spam',
          bounce_type: 'block',
          via: { mx: 'mx.example.org', address: '127.0.0.2', source: null, tls: 'TLSv1.3' },
        },
      },
    ]);
    expect(outcome.suppress).toEqual([]);
  });

  it('takes the most severe simulated answer when only simulator addresses were sent to', async () => {
    const outcome = await outcomeFor(hop(false), [
      'delivered@simulator.posthorn.test',
      'complained@simulator.posthorn.test',
    ]);
    expect(outcome.status).toBe('complained');
    expect(outcome.response).toBe('250 2.0.0 simulated: delivered, then marked as spam');
    expect(outcome.events.map((e) => e.type)).toEqual(['delivered', 'delivered', 'complained']);
    const bounced = await outcomeFor(hop(false), [
      'bounced@simulator.posthorn.test',
      'deferred@simulator.posthorn.test',
    ]);
    expect(bounced.status).toBe('bounced');
    expect(bounced.events[0].detail).toEqual({
      response: '550 5.1.1 simulated: the mailbox does not exist',
      simulated: true,
      bounce_type: 'hard',
    });
    expect(bounced.suppress).toEqual([]);
  });

  it('lets the real recipients decide the status when simulator addresses ride along', async () => {
    const outcome = await outcomeFor(hop(false), ['a@example.org', 'bounced@simulator.posthorn.test']);
    expect(outcome.status).toBe('sent');
    expect(outcome.response).toBe('250 ok');
    expect(outcome.events.map((e) => [e.type, e.recipient])).toEqual([
      ['sent', 'a@example.org'],
      ['bounced', 'bounced@simulator.posthorn.test'],
    ]);
  });

  it('bounces and suppresses every handed-over recipient on a permanent failure, keeping simulated answers', () => {
    const outcome = newOutcome('e1');
    const answered = [
      {
        recipient: 'delivered@simulator.posthorn.test',
        accepted: true,
        final: true,
        simulated: true,
        response: '250 2.0.0 simulated: delivered',
      },
    ];
    applyFailure(outcome, new DeliveryError('no', { permanent: true, response: '554 denied', answered }), [
      'a@example.org',
      'delivered@simulator.posthorn.test',
    ]);
    expect(outcome.status).toBe('bounced');
    expect(outcome.response).toBe('554 denied');
    expect(outcome.events.map((e) => [e.type, e.recipient])).toEqual([
      ['bounced', 'a@example.org'],
      ['delivered', 'delivered@simulator.posthorn.test'],
    ]);
    expect(outcome.suppress.map((s) => s.email)).toEqual(['a@example.org']);
  });

  it('fails the message without bouncing or suppressing anyone when the hop refused the sender', () => {
    const outcome = newOutcome('e1');
    const refusal = new DeliveryError('no', {
      permanent: true,
      recipientsAtFault: false,
      responseCode: 553,
      response: '553 5.7.1 Sender not allowed',
    });
    applyFailure(outcome, refusal, ['a@example.org', 'b@example.org']);
    expect(outcome.status).toBe('failed');
    expect(outcome.events).toEqual([
      {
        type: 'failed',
        recipient: null,
        detail: { reason: 'the next hop refused the sender', response: '553 5.7.1 Sender not allowed' },
      },
    ]);
    expect(outcome.suppress).toEqual([]);
  });

  it('defers the message on a temporary failure with one event for it as a whole', () => {
    const outcome = newOutcome('e1');
    applyFailure(outcome, new DeliveryError('later', { permanent: false, response: '421 busy' }), [
      'a@example.org',
    ]);
    expect(outcome.status).toBe('deferred');
    expect(outcome.events).toEqual([{ type: 'deferred', recipient: null, detail: { response: '421 busy' } }]);
    expect(outcome.suppress).toEqual([]);
  });
});
