import { isDatabaseUnavailable } from './database.ts';

const FIRST_DELAY_MS = 250;
const LONGEST_DELAY_MS = 5_000;

export interface Patience {
  /** How long to keep trying while the database is unreachable. */
  patienceMs: number;
  /** Called once, when the first attempt finds the database unreachable. */
  onWait?: (err: unknown) => void;
  /** Called once, when an attempt succeeds after waiting. */
  onBack?: () => void;
  /** Stop trying (and throw the last error) once this says so, e.g. when shutting down. */
  stopped?: () => boolean;
}

/**
 * Runs `attempt` until it succeeds, again after a growing pause (250 ms to 5 s) whenever it fails
 * because the database is unreachable (a restart, a failover, a server not up yet), for at most
 * `patienceMs`. Any other error, or the last one past the bound, is thrown.
 */
export async function whileDatabaseUnavailable<T>(attempt: () => Promise<T>, patience: Patience): Promise<T> {
  const giveUpAt = Date.now() + patience.patienceMs;
  let delay = FIRST_DELAY_MS;
  for (let waited = false; ; waited = true) {
    try {
      const result = await attempt();
      if (waited) patience.onBack?.();
      return result;
    } catch (err) {
      if (!isDatabaseUnavailable(err) || Date.now() + delay > giveUpAt || patience.stopped?.()) throw err;
      if (!waited) patience.onWait?.(err);
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, LONGEST_DELAY_MS);
    }
  }
}
