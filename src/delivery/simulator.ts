import { isSimulated, SIMULATED_REPLIES, simulatedOutcome } from '../mail/simulator.ts';
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
