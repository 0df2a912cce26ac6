export interface EventuallyOptions {
  /** How long to keep trying (default 10 s); one last try is made when the time is up. */
  timeoutMs?: number;
  /** Pause between tries (default 50 ms). */
  intervalMs?: number;
  /** Put before the last failure when the time runs out: what was being waited for. */
  message?: string;
}

/**
 * Runs `check` until it passes, for what the program does in the background (a job, a webhook, a
 * delivery). The check passes when it neither throws nor returns `false`; it may be an assertion
 * (`expect(...)`) or a predicate, and what it returns is returned. When the time runs out, the last
 * failure is thrown with `message` in front, so a timeout still shows the last state seen.
 */
export async function eventually<T>(
  check: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 50, message = 'the condition was not met' }: EventuallyOptions = {},
): Promise<Exclude<T, false>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const result = await check();
      if (result !== false) return result as Exclude<T, false>;
      last = new Error('the check returned false');
    } catch (err) {
      last = err;
    }
    const left = deadline - Date.now();
    if (left <= 0) break;
    await new Promise((resolve) => setTimeout(resolve, Math.min(intervalMs, left)));
  }
  const within = `${message} (within ${timeoutMs} ms)`;
  if (last instanceof Error) {
    // keep the error itself: an assertion error keeps its expected/actual diff
    const old = last.message;
    last.message = `${within}: ${old}`;
    if (old && last.stack) last.stack = last.stack.replace(old, last.message);
    throw last;
  }
  throw new Error(`${within}: ${String(last)}`);
}
