import { describe, expect, it } from 'vitest';
import { GroupCommit } from '../../src/domain/core/group-commit.ts';

/** A flush that records each group it was given and waits until the test releases it. */
function recordingFlush<T>(fail?: (items: T[]) => boolean) {
  const groups: T[][] = [];
  const waiting: (() => void)[] = [];
  const flush = async (items: T[]) => {
    groups.push(items);
    await new Promise<void>((resolve) => waiting.push(resolve));
    if (fail?.(items)) throw new Error(`group of ${items.length} failed`);
    return items.map((i) => ({ done: i }));
  };
  const releaseAll = async () => {
    while (waiting.length > 0) {
      for (const release of waiting.splice(0)) release();
      await new Promise((r) => setTimeout(r, 0));
    }
  };
  return { groups, flush, releaseAll };
}

describe('group commit', () => {
  it('writes items that arrive during a write together in the next one, answering each with its own result', async () => {
    const { groups, flush, releaseAll } = recordingFlush<number>();
    const group = new GroupCommit(flush, { maxInFlight: 1 });
    const answers = [1, 2, 3, 4].map((i) => group.submit(i));
    await releaseAll();
    expect(await Promise.all(answers)).toEqual([{ done: 1 }, { done: 2 }, { done: 3 }, { done: 4 }]);
    expect(groups).toEqual([[1], [2, 3, 4]]);
  });

  it('caps a group by the items’ weight, and a heavier item than the cap still goes alone', async () => {
    const { groups, flush, releaseAll } = recordingFlush<string>();
    const group = new GroupCommit(flush, { maxInFlight: 1, maxWeight: 5, weight: (s) => s.length });
    const answers = ['a', 'bb', 'ccc', 'dddddddd', 'e', 'ff'].map((s) => group.submit(s));
    await releaseAll();
    await Promise.all(answers);
    expect(groups).toEqual([['a'], ['bb', 'ccc'], ['dddddddd'], ['e', 'ff']]);
  });

  it('retries each item of a failed group alone, so only the bad item fails', async () => {
    const { flush, releaseAll } = recordingFlush<number>((items) => items.includes(13));
    const group = new GroupCommit(flush, { maxInFlight: 1 });
    const answers = [1, 2, 13, 4].map((i) =>
      group.submit(i).then(
        (r) => r,
        (err: Error) => err.message,
      ),
    );
    await releaseAll();
    expect(await Promise.all(answers)).toEqual([{ done: 1 }, { done: 2 }, 'group of 1 failed', { done: 4 }]);
  });

  it('fails the whole group together when retryAlone is false', async () => {
    const { groups, flush, releaseAll } = recordingFlush<number>((items) => items.includes(13));
    const group = new GroupCommit(flush, { maxInFlight: 1, retryAlone: false });
    const answers = [1, 2, 13].map((i) => group.submit(i).catch((err: Error) => err.message));
    await releaseAll();
    expect(await Promise.all(answers)).toEqual([{ done: 1 }, 'group of 2 failed', 'group of 2 failed']);
    expect(groups).toEqual([[1], [2, 13]]);
  });
});
