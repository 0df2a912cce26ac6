import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/domain/core/errors.ts';
import { FairWorkerPool, type JobMerge, THREAD_YOUNG_MB } from '../../src/domain/templates/fair-pool.ts';
import type { FixtureJob } from '../fixtures/pool-worker.ts';

const script = new URL('../fixtures/pool-worker.ts', import.meta.url);
const newPool = (threads = 1, merge?: JobMerge<FixtureJob, string>) =>
  new FairWorkerPool<FixtureJob, string>({
    script,
    threads,
    memoryMb: 256,
    outOfMemory: 'too much memory',
    merge,
  });
// queued jobs of one owner go to the thread together, three at most
const mergeThree: JobMerge<FixtureJob, string> = {
  fits: (taken) => taken.length < 3,
  combine: (requests) => ({ merged: requests }),
  split: (result) => result.split(','),
};
const budget = (cpuMs: number) => ({ cpuMs, wallMs: 60_000, overBudget: 'over its CPU budget' });

describe('FairWorkerPool', () => {
  it("serves a newcomer's job after the job running, ahead of another owner's backlog", async () => {
    const pool = newPool(1);
    const finished: string[] = [];
    const run = (owner: string, label: string) =>
      pool.run(owner, { spinMs: 40, label }, budget(5_000)).then((l) => finished.push(l));
    const backlog = Array.from({ length: 6 }, (_, i) => run('a', `a${i}`));
    // a's first job is running (or starting) when b's only job arrives
    const newcomer = run('b', 'b0');
    await Promise.all([...backlog, newcomer]);
    expect(finished.indexOf('b0')).toBe(1);
    // a's own jobs keep their order
    expect(finished.filter((l) => l.startsWith('a'))).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5']);
  });

  it('takes two backlogged owners in turns', async () => {
    const pool = newPool(1);
    const finished: string[] = [];
    const run = (owner: string, label: string) =>
      pool.run(owner, { spinMs: 20, label }, budget(5_000)).then((l) => finished.push(l));
    await Promise.all([
      ...['a0', 'a1', 'a2'].map((l) => run('a', l)),
      ...['b0', 'b1', 'b2'].map((l) => run('b', l)),
    ]);
    expect(finished).toEqual(['a0', 'b0', 'a1', 'b1', 'a2', 'b2']);
  });

  it("caps a thread's old generation at memoryMb and its young generation at THREAD_YOUNG_MB", async () => {
    // left to Node, a thread capped at 256 MB gets a 192 MB nursery, resident once a campaign fills it
    const limits = JSON.parse(await newPool(1).run('a', { limits: true }, budget(5_000)));
    expect(limits).toMatchObject({ maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: THREAD_YOUNG_MB });
    expect(THREAD_YOUNG_MB).toBeLessThan(64);
  });

  it('stops a job past its CPU budget with a ValidationError, and the next job runs on a new thread', async () => {
    const pool = newPool(1);
    const over = pool.run('a', { spinMs: 20_000, label: 'endless' }, budget(300));
    await expect(over).rejects.toBeInstanceOf(ValidationError);
    await expect(over).rejects.toThrow('over its CPU budget');
    await expect(pool.run('a', { spinMs: 1, label: 'next' }, budget(5_000))).resolves.toBe('next');
  });

  it("gives a thread's ValidationError back as one, and any other error as a plain Error", async () => {
    const pool = newPool(1);
    const refused = pool.run('a', { fail: 'validation' }, budget(5_000));
    await expect(refused).rejects.toBeInstanceOf(ValidationError);
    await expect(refused).rejects.toThrow('`field` is wrong');
    const broken = pool.run('a', { fail: 'other' }, budget(5_000));
    await expect(broken).rejects.toThrow('something broke');
    await expect(broken).rejects.not.toBeInstanceOf(ValidationError);
  });

  it("merges an owner's queued jobs, and gives each its own result", async () => {
    const pool = newPool(1, mergeThree);
    const runs = ['a', 'b', 'c', 'd', 'e'].map((label) => pool.run('p', { spinMs: 1, label }, budget(5_000)));
    expect(await Promise.all(runs)).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('runs the jobs of a failed merge again one by one: the failing one fails alone', async () => {
    const pool = newPool(1, mergeThree);
    // the first goes alone while the thread starts; the next three are merged, one of them failing
    const runs = [
      pool.run('p', { spinMs: 1, label: 'first' }, budget(5_000)),
      pool.run('p', { spinMs: 1, label: 'before' }, budget(5_000)),
      pool.run('p', { fail: 'validation' }, budget(5_000)),
      pool.run('p', { spinMs: 1, label: 'after' }, budget(5_000)),
    ];
    const outcomes = await Promise.allSettled(runs);
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message))).toEqual([
      'first',
      'before',
      '`field` is wrong',
      'after',
    ]);
  });

  it("puts an owner's foreground jobs ahead of its queued background jobs, behind the job running", async () => {
    const pool = newPool(1);
    const finished: string[] = [];
    const run = (label: string, lane: 'foreground' | 'background') =>
      pool.run('p', { spinMs: 20, label }, budget(5_000), lane).then((l) => finished.push(l));
    // the thread is not ready yet: every job below waits in the queue
    await Promise.all([
      run('b0', 'background'),
      run('b1', 'background'),
      run('f0', 'foreground'),
      run('b2', 'background'),
      run('f1', 'foreground'),
    ]);
    expect(finished).toEqual(['f0', 'f1', 'b0', 'b1', 'b2']);
    // with the thread ready, the background job running finishes first
    finished.length = 0;
    const running = run('b3', 'background');
    await Promise.all([running, run('b4', 'background'), run('f2', 'foreground')]);
    expect(finished).toEqual(['b3', 'f2', 'b4']);
  });

  it('never merges a foreground job with background ones', async () => {
    const combined: string[][] = [];
    const pool = newPool(1, {
      ...mergeThree,
      combine: (requests) => {
        combined.push(requests.map((r) => ('label' in r ? r.label : '?')));
        return { merged: requests };
      },
    });
    const runs = [
      pool.run('p', { spinMs: 1, label: 'f0' }, budget(5_000), 'foreground'),
      pool.run('p', { spinMs: 1, label: 'b0' }, budget(5_000), 'background'),
      pool.run('p', { spinMs: 1, label: 'b1' }, budget(5_000), 'background'),
    ];
    expect(await Promise.all(runs)).toEqual(['f0', 'b0', 'b1']);
    expect(combined).toEqual([['b0', 'b1']]);
  });

  it("runs a failed background merge's jobs again behind the foreground jobs queued meanwhile", async () => {
    const pool = newPool(1, mergeThree);
    const finished: string[] = [];
    const settle = (p: Promise<string>, label: string) =>
      p.then(
        () => finished.push(label),
        () => finished.push(`${label} failed`),
      );
    await pool.run('p', { spinMs: 1, label: 'warm' }, budget(5_000));
    // the thread is idle: b0 starts alone; the next two wait and then go to the thread merged
    const b0 = pool.run('p', { spinMs: 20, label: 'b0' }, budget(5_000), 'background');
    const failing = pool.run('p', { fail: 'validation' }, budget(5_000), 'background');
    const b1 = pool.run('p', { spinMs: 1, label: 'b1' }, budget(5_000), 'background');
    // f0 comes once b0 is done, while the merged job runs (and fails)
    let f0: Promise<number> = Promise.resolve(0);
    const b0done = settle(b0, 'b0').then(() => {
      f0 = settle(pool.run('p', { spinMs: 1, label: 'f0' }, budget(5_000), 'foreground'), 'f0');
    });
    await Promise.all([b0done, settle(failing, 'x'), settle(b1, 'b1')]);
    await f0;
    expect(finished).toEqual(['b0', 'f0', 'x failed', 'b1']);
  });
});
