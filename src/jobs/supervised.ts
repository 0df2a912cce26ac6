import { setTimeout as sleep } from 'node:timers/promises';
import type { Runner } from 'graphile-worker';
import type { Logger } from 'pino';

/** How long a worker pool that failed waits before it is started again, at the least and most. */
const RESTART_MS = [1_000, 30_000] as const;

/** Waits `ms` unless `signal` aborts first (then it returns at once). */
export type Pause = (ms: number, signal: AbortSignal) => Promise<void>;

const pauseFor: Pause = (ms, signal) => sleep(ms, undefined, { signal }).catch(() => {});

/**
 * Runs `start`'s runner and starts it again whenever its pool stops on an error before `stop` is
 * called (after a pause that grows from one second to thirty while the starts keep failing).
 */
export async function supervised(
  name: string,
  log: Pick<Logger, 'info' | 'error'>,
  start: () => Promise<Pick<Runner, 'promise' | 'stop'>>,
  pause: Pause = pauseFor,
): Promise<{ stop(): Promise<void> }> {
  let stopping = false;
  const stopped = new AbortController();
  let current: Pick<Runner, 'promise' | 'stop'> | null = await start();
  let restarting: Promise<void> = Promise.resolve();
  const watch = (runner: Pick<Runner, 'promise' | 'stop'>) => {
    runner.promise.catch((err: unknown) => {
      if (stopping) return;
      current = null;
      log.error({ err }, `${name} stopped on an error: starting it again`);
      restarting = (async () => {
        for (let delay: number = RESTART_MS[0]; !stopping; delay = Math.min(delay * 2, RESTART_MS[1])) {
          await pause(delay, stopped.signal);
          if (stopping) return;
          try {
            current = await start();
            watch(current);
            log.info(`${name} started again`);
            return;
          } catch (e) {
            log.error(
              { err: e },
              `${name} could not start again: trying in ${Math.min(delay * 2, RESTART_MS[1]) / 1000} s`,
            );
          }
        }
      })();
    });
  };
  watch(current);
  return {
    async stop() {
      stopping = true;
      stopped.abort();
      await restarting;
      await current?.stop();
    },
  };
}
