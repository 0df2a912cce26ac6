import { createHash } from 'node:crypto';
import { isSimulated, SIMULATED_REPLIES, simulatedOutcome } from '../mail/simulator.ts';
import type { SimulatedRoute } from './routes/config.ts';
import {
  DeliveryError,
  type DeliveryResult,
  deliveryErrorOf,
  type OutboundMessage,
  type RecipientResult,
  type Transport,
} from './transport.ts';

/** What the simulator answers for one of its addresses; `deferred@` is deferred once, then delivered. */
function simulatedAnswer(recipient: string, attempt: number): RecipientResult {
  let outcome = simulatedOutcome(recipient);
  if (outcome === 'deferred' && attempt > 1) outcome = 'delivered'; // a temporary failure, once
  return answerOf(recipient, outcome);
}

/** The simulator's answer for an outcome, as a receiving server's would read. */
export function answerOf(recipient: string, outcome: ReturnType<typeof simulatedOutcome>): RecipientResult {
  const answer = { recipient, final: true, simulated: true };
  switch (outcome) {
    case 'delivered':
      return { ...answer, accepted: true, response: SIMULATED_REPLIES.delivered };
    case 'complained':
      return {
        ...answer,
        accepted: true,
        response: SIMULATED_REPLIES.delivered,
        complaint: SIMULATED_REPLIES.complained,
      };
    case 'deferred':
      return { ...answer, accepted: false, responseCode: 451, response: SIMULATED_REPLIES.deferred };
    case 'bounced':
      return { ...answer, accepted: false, responseCode: 550, response: SIMULATED_REPLIES.bounced };
  }
}

/**
 * The transport with the simulator in front: recipients at the simulator domain are answered here
 * and never leave the machine; the others are handed to `inner`. The result holds both, one answer
 * per recipient. When the hand-over to `inner` fails, the error carries the simulator's answers.
 */
export function withSimulator(inner: Transport): Transport {
  return {
    name: inner.name,
    async send(message: OutboundMessage): Promise<DeliveryResult> {
      const simulated = message.to.filter(isSimulated);
      if (simulated.length === 0) return inner.send(message);
      const answers = simulated.map((r) => simulatedAnswer(r, message.attempt));
      const real = message.to.filter((r) => !isSimulated(r));
      if (real.length === 0)
        return { response: answers.map((a) => a.response).join('; '), recipients: answers };
      try {
        const result = await inner.send({ ...message, to: real });
        return { ...result, recipients: [...result.recipients, ...answers] };
      } catch (err) {
        const e = deliveryErrorOf(err);
        throw new DeliveryError(e.message, {
          permanent: e.permanent,
          recipientsAtFault: e.recipientsAtFault,
          notTaken: e.notTaken,
          responseCode: e.responseCode,
          response: e.response,
          answered: answers,
        });
      }
    },
    ...(inner.probe ? { probe: () => inner.probe?.() as Promise<void> } : {}),
    close: () => inner.close(),
  };
}

/**
 * The feedback simulator's way out (a `simulated` route): nothing leaves; each recipient is
 * hard-bounced, complains or is delivered by the route's rates, chosen by a hash of the message id
 * and the recipient (the same answer on every attempt).
 */
export function createSimulatedTransport(route: SimulatedRoute): Transport {
  const share = (messageId: string, recipient: string) =>
    createHash('sha256').update(`${messageId}\n${recipient.toLowerCase()}`).digest().readUInt32BE(0) /
    2 ** 32;
  return withSimulator({
    name: 'simulated',
    async send(message: OutboundMessage): Promise<DeliveryResult> {
      message.onSession?.();
      const recipients = message.to.map((r) => {
        const x = share(message.messageId, r) * 100;
        return answerOf(
          r,
          x < route.bounceRate
            ? 'bounced'
            : x < route.bounceRate + route.complaintRate
              ? 'complained'
              : 'delivered',
        );
      });
      return { response: recipients.map((a) => a.response).join('; '), recipients };
    },
    close: async () => {},
  });
}
