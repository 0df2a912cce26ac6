import { describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.ts';

describe('eventually', () => {
  it('retries a failing assertion until it passes and returns what the check returns', async () => {
    let tries = 0;
    const value = await eventually(
      () => {
        tries++;
        expect(tries).toBeGreaterThanOrEqual(3);
        return 'done';
      },
      { intervalMs: 1 },
    );
    expect(value).toBe('done');
    expect(tries).toBe(3);
  });

  it('treats a predicate returning false as not yet, and any other value as passed', async () => {
    let tries = 0;
    await expect(eventually(() => ++tries > 2, { intervalMs: 1 })).resolves.toBe(true);
    await expect(eventually(() => undefined)).resolves.toBeUndefined();
  });

  it('throws the last failure with the message in front when the time runs out', async () => {
    let tries = 0;
    const failure = eventually(
      async () => {
        tries++;
        expect(tries, 'tries').toBe(-1);
      },
      { timeoutMs: 50, intervalMs: 10, message: 'never negative' },
    );
    await expect(failure).rejects.toThrow(/^never negative \(within 50 ms\): tries: expected \d+ to be -1/);
    expect(tries).toBeGreaterThan(1);
    await expect(eventually(() => false, { timeoutMs: 20 })).rejects.toThrow('the check returned false');
  });
});
