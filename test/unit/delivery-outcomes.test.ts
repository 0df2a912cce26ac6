import { describe, expect, it } from 'vitest';
import { withSimulator } from '../../src/delivery/simulator.ts';
import { DeliveryError, type DeliveryResult, type Transport } from '../../src/delivery/transport.ts';
import { applyFailure, applyResult, newOutcome } from '../../src/domain/emails/delivery-outcomes.ts';

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

  it('records each refused recipient: a 5xx bounces and suppresses, a 4xx defers', async () => {
    const outcome = await outcomeFor(
      hop(false, { 'gone@example.org': [550, '550 no such user'], 'full@example.org': [452, '452 full'] }),
      ['a@example.org', 'gone@example.org', 'full@example.org'],
    );
    expect(outcome.status).toBe('sent');
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
