import { localPartOf } from './address.ts';

/**
 * The simulator: addresses at this reserved domain run the whole pipeline but never leave the
 * machine. The local part chooses the outcome; anything else is delivered. Simulated outcomes are
 * recorded as events and statuses but never added to the suppression list. The transport wrapper
 * that answers them is `delivery/simulator.ts`.
 */
export const SIMULATOR_DOMAIN = 'simulator.posthorn.test';

export type SimulatedOutcome = 'delivered' | 'bounced' | 'complained' | 'deferred';

export function isSimulated(address: string): boolean {
  return address.toLowerCase().endsWith(`@${SIMULATOR_DOMAIN}`);
}

export function simulatedOutcome(address: string): SimulatedOutcome {
  const local = localPartOf(address).toLowerCase().split('+')[0];
  return (['bounced', 'complained', 'deferred'] as const).find((o) => o === local) ?? 'delivered';
}

export const SIMULATED_REPLIES: Record<SimulatedOutcome, string> = {
  delivered: '250 2.0.0 simulated: delivered',
  bounced: '550 5.1.1 simulated: the mailbox does not exist',
  complained: '250 2.0.0 simulated: delivered, then marked as spam',
  deferred: '451 4.3.0 simulated: temporary failure, try again later',
};
