import { describe, expect, it } from 'vitest';
import { type Pause, supervised } from '../../src/jobs/supervised.ts';
import { eventually } from '../helpers/eventually.ts';

/** A runner as graphile-worker's `run` gives it: a promise that ends with its pool, and a stop. */
function fakeRunner() {
  let fail!: (err: Error) => void;
  let finish!: () => void;
  const promise = new Promise<void>((resolve, reject) => {
    fail = reject;
    finish = resolve;
  });
  const runner = {
    promise,
    stopped: false,
    async stop() {
      runner.stopped = true;
      finish();
    },
  };
  return { runner, fail };
}

function recordingLog() {
  const lines: string[] = [];
  return {
    lines,
    log: {
      info: (msg: string) => lines.push(msg),
      error: (_o: unknown, msg: string) => lines.push(msg),
    } as never,
  };
}

/**
 * A moved clock: each pause is recorded and ends when the test says so (`release`), or at once
 * when the supervisor is stopped (its signal aborts).
 */
function recordedPauses() {
  const asked: number[] = [];
  const waiting: (() => void)[] = [];
  const pause: Pause = (ms, signal) =>
    new Promise((resolve) => {
      asked.push(ms);
      waiting.push(resolve);
      signal.addEventListener('abort', () => resolve(), { once: true });
    });
  return { pause, asked, release: () => waiting.shift()?.() };
}

/** A supervisor over fake runners (each made by `make`, default a plain one), its log and its clock. */
async function supervise(
  make: (made: ReturnType<typeof fakeRunner>[]) => ReturnType<typeof fakeRunner> = fakeRunner,
) {
  const made: ReturnType<typeof fakeRunner>[] = [];
  const { lines, log } = recordingLog();
  const clock = recordedPauses();
  const role = await supervised(
    'the pool',
    log,
    async () => {
      const r = make(made);
      made.push(r);
      return r.runner;
    },
    clock.pause,
  );
  return { made, lines, clock, role };
}

describe('a supervised worker pool', () => {
  it('is started again after a pause when its pool stops on an error, and the new one is what stop() stops', async () => {
    const { made, lines, clock, role } = await supervise();
    made[0].fail(new Error('Failed to release job; committing seppuku'));
    await eventually(() => expect(clock.asked).toEqual([1_000]));
    expect(lines).toContain('the pool stopped on an error: starting it again');
    expect(made).toHaveLength(1); // not before its pause has passed
    clock.release();
    await eventually(() => lines.includes('the pool started again'));
    expect(made).toHaveLength(2);
    await role.stop();
    expect(made[1].runner.stopped).toBe(true);
    expect(made[0].runner.stopped).toBe(false);
  });

  it('keeps trying while a new start fails, each pause twice the last up to 30 s, and a stop ends the tries', async () => {
    let tries = 0;
    const { made, lines, clock, role } = await supervise(() => {
      tries++;
      if (tries > 1) throw new Error('connect ECONNREFUSED');
      return fakeRunner();
    });
    made[0].fail(new Error('Could not completeJobs'));
    for (let i = 1; i <= 6; i++) {
      await eventually(() => expect(clock.asked).toHaveLength(i));
      clock.release();
    }
    await eventually(() => expect(clock.asked).toHaveLength(7));
    expect(clock.asked).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    expect(tries).toBe(7);
    expect(lines).toContain('the pool could not start again: trying in 2 s');
    // the seventh pause is under way: stop() ends it without another start
    await role.stop();
    expect(tries).toBe(7);
  });

  it('a pool whose stop ends in an error (a job not released cleanly) is not started again', async () => {
    const { made, lines, clock, role } = await supervise(() => {
      const r = fakeRunner();
      r.runner.stop = async () => r.fail(new Error('Worker pool failed to shut down cleanly'));
      return r;
    });
    await role.stop();
    await expect(made[0].runner.promise).rejects.toThrow('shut down cleanly');
    // the supervisor's own handler of that rejection has run by now (it was attached first)
    await new Promise((resolve) => setImmediate(resolve));
    expect(clock.asked).toEqual([]);
    expect(lines).toEqual([]);
    expect(made).toHaveLength(1);
  });
});
