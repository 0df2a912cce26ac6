import { describe, expect, it } from 'vitest';
import { withSimulator } from '../../src/delivery/simulator.ts';
import {
  DeliveryError,
  type DeliveryResult,
  type OutboundMessage,
  type Transport,
} from '../../src/delivery/transport.ts';

/** A stand-in for the relay: records what it was handed and answers like one (accepts everyone). */
function fakeRelay(fail?: Error) {
  const sent: OutboundMessage[] = [];
  let closed = false;
  const transport: Transport = {
    name: 'fake-relay',
    async send(message): Promise<DeliveryResult> {
      sent.push(message);
      if (fail) throw fail;
      return {
        response: '250 2.0.0 queued as X',
        recipients: message.to.map((recipient) => ({
          recipient,
          accepted: true,
          final: false,
          response: '250 2.0.0 queued as X',
        })),
      };
    },
    async close() {
      closed = true;
    },
  };
  return { transport, sent, isClosed: () => closed };
}

const message = (to: string[], attempt = 1): OutboundMessage => ({
  from: 'bounces+x@posthorn.localhost',
  to,
  raw: Buffer.from('Subject: hi\r\n\r\nhello\r\n'),
  messageId: '<m1@posthorn.localhost>',
  attempt,
  tags: { email: 'e1', project: null, stream: 'transactional' },
});

describe('the simulator in front of a transport', () => {
  it('hands a message with no simulator address to the inner transport unchanged', async () => {
    const relay = fakeRelay();
    const msg = message(['a@example.org', 'b@example.org']);
    const result = await withSimulator(relay.transport).send(msg);
    expect(relay.sent).toEqual([msg]);
    expect(result.recipients.map((r) => [r.recipient, r.accepted, r.final])).toEqual([
      ['a@example.org', true, false],
      ['b@example.org', true, false],
    ]);
    expect(result.recipients.some((r) => r.simulated)).toBe(false);
  });

  it('answers simulator addresses itself: nothing reaches the inner transport', async () => {
    const relay = fakeRelay();
    const result = await withSimulator(relay.transport).send(
      message([
        'delivered@simulator.posthorn.test',
        'bounced@simulator.posthorn.test',
        'complained@simulator.posthorn.test',
        'deferred@simulator.posthorn.test',
      ]),
    );
    expect(relay.sent).toEqual([]);
    expect(result.recipients).toEqual([
      {
        recipient: 'delivered@simulator.posthorn.test',
        accepted: true,
        final: true,
        simulated: true,
        response: '250 2.0.0 simulated: delivered',
      },
      {
        recipient: 'bounced@simulator.posthorn.test',
        accepted: false,
        final: true,
        simulated: true,
        responseCode: 550,
        response: '550 5.1.1 simulated: the mailbox does not exist',
      },
      {
        recipient: 'complained@simulator.posthorn.test',
        accepted: true,
        final: true,
        simulated: true,
        response: '250 2.0.0 simulated: delivered',
        complaint: '250 2.0.0 simulated: delivered, then marked as spam',
      },
      {
        recipient: 'deferred@simulator.posthorn.test',
        accepted: false,
        final: true,
        simulated: true,
        responseCode: 451,
        response: '451 4.3.0 simulated: temporary failure, try again later',
      },
    ]);
  });

  it('defers deferred@ on the first attempt only, then delivers it', async () => {
    const simulator = withSimulator(fakeRelay().transport);
    const first = await simulator.send(message(['deferred@simulator.posthorn.test'], 1));
    const retry = await simulator.send(message(['deferred@simulator.posthorn.test'], 2));
    expect(first.recipients[0]).toMatchObject({ accepted: false, responseCode: 451 });
    expect(retry.recipients[0]).toMatchObject({
      accepted: true,
      response: '250 2.0.0 simulated: delivered',
    });
  });

  it('recognises its domain in any case and ignores a +tag in the local part', async () => {
    const relay = fakeRelay();
    const result = await withSimulator(relay.transport).send(
      message(['Bounced+order-7@Simulator.Posthorn.Test', 'someone@simulator.posthorn.test']),
    );
    expect(relay.sent).toEqual([]);
    expect(result.recipients.map((r) => [r.accepted, r.responseCode])).toEqual([
      [false, 550],
      [true, undefined],
    ]);
  });

  it('hands only the real recipients over and returns every answer, the relay keeping its reply', async () => {
    const relay = fakeRelay();
    const result = await withSimulator(relay.transport).send(
      message(['real@example.org', 'bounced@simulator.posthorn.test', 'other@example.org'], 3),
    );
    expect(relay.sent).toHaveLength(1);
    expect(relay.sent[0]).toMatchObject({ to: ['real@example.org', 'other@example.org'], attempt: 3 });
    expect(result.response).toBe('250 2.0.0 queued as X');
    expect(result.recipients.map((r) => [r.recipient, r.accepted, r.final, r.simulated ?? false])).toEqual([
      ['real@example.org', true, false, false],
      ['other@example.org', true, false, false],
      ['bounced@simulator.posthorn.test', false, true, true],
    ]);
  });

  it('keeps its answers on the error when the hand-over of the real recipients fails', async () => {
    const refusal = new DeliveryError('relay says no', {
      permanent: true,
      responseCode: 554,
      response: '554 5.7.1 relay access denied',
    });
    const relay = fakeRelay(refusal);
    const sending = withSimulator(relay.transport).send(
      message(['real@example.org', 'delivered@simulator.posthorn.test']),
    );
    const error = await sending.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeliveryError);
    expect(error).toMatchObject({
      permanent: true,
      responseCode: 554,
      response: '554 5.7.1 relay access denied',
      answered: [{ recipient: 'delivered@simulator.posthorn.test', accepted: true, simulated: true }],
    });
  });

  it('reports an inner failure that is not a DeliveryError as temporary', async () => {
    const relay = fakeRelay(new Error('socket hang up'));
    const error = await withSimulator(relay.transport)
      .send(message(['real@example.org', 'deferred@simulator.posthorn.test']))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ permanent: false, response: 'socket hang up' });
    expect((error as DeliveryError).answered).toHaveLength(1);
  });

  it('passes an inner failure through untouched when no simulator address is involved', async () => {
    const refusal = new DeliveryError('down', { permanent: false });
    const relay = fakeRelay(refusal);
    await expect(withSimulator(relay.transport).send(message(['real@example.org']))).rejects.toBe(refusal);
  });

  it('keeps the inner transport name and closes it', async () => {
    const relay = fakeRelay();
    const simulator = withSimulator(relay.transport);
    expect(simulator.name).toBe('fake-relay');
    await simulator.close();
    expect(relay.isClosed()).toBe(true);
  });
});
