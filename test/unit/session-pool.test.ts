// The one session pool (src/delivery/session-pool.ts), relay's and direct lanes' alike: who gets a
// session when several wait. Sessions here are plain objects: what is tested is the pool's choice.
import { describe, expect, it } from 'vitest';
import { type Claimant, type PooledSession, SessionPool } from '../../src/delivery/session-pool.ts';

interface Fake extends PooledSession {
  n: number;
}

function poolOf(cap: number, bulkShare?: number) {
  let opened = 0;
  const ended: number[] = [];
  const pool = new SessionPool<Fake>({
    cap: () => cap,
    ...(bulkShare ? { bulkShare } : {}),
    idleMs: 60_000,
    end: (s) => {
      ended.push(s.n);
    },
  });
  const connect = async (): Promise<Fake> => ({ n: ++opened, dead: false, carried: 0, idleTimer: null });
  const order: string[] = [];
  const take = (name: string, claimant: Claimant) =>
    pool
      .take(claimant, () => true, connect)
      .then((s) => {
        order.push(name);
        return s;
      });
  return { pool, take, order, ended, opened: () => opened };
}

const bulk = (project: string): Claimant => ({ urgency: 'bulk', project });
const tx = (project: string): Claimant => ({ urgency: 'transactional', project });
const system: Claimant = { urgency: 'system', project: null };

describe('the session pool', () => {
  it('opens up to its cap, then gives a freed session to the service’s own mail first, then transactional, then bulk', async () => {
    const { pool, take, order, opened } = poolOf(2);
    const a = await take('a', bulk('p1'));
    await take('b', bulk('p1'));
    expect(opened()).toBe(2);
    const waiting = [take('bulk', bulk('p2')), take('tx', tx('p3')), take('system', system)];
    await Promise.resolve();
    expect(pool.waiting).toBe(3);
    pool.release(a);
    const first = await Promise.race(waiting);
    expect(order.at(-1)).toBe('system');
    pool.release(first);
    await new Promise((r) => setImmediate(r));
    expect(order.slice(2)).toEqual(['system', 'tx']);
    expect(opened()).toBe(2);
  });

  it('within a class, gives a freed session to the project holding the fewest: no project holds more than its share while others wait', async () => {
    const { pool, take, order } = poolOf(4);
    // project A holds all four sessions; its next messages and B's wait
    const held = await Promise.all([1, 2, 3, 4].map((i) => take(`A${i}`, bulk('A'))));
    const more = [take('A5', bulk('A')), take('A6', bulk('A')), take('B1', bulk('B')), take('B2', bulk('B'))];
    await Promise.resolve();
    pool.release(held[0]);
    pool.release(held[1]);
    await new Promise((r) => setImmediate(r));
    // B came after A's waiters, yet gets both: A holds two, B none, then one
    expect(order.slice(4)).toEqual(['B1', 'B2']);
    pool.release(held[2]);
    await new Promise((r) => setImmediate(r));
    expect(order.at(-1)).toBe('A5');
    void more;
  });

  it('lets bulk mail hold at most its share, so transactional mail always finds a session', async () => {
    const { pool, take, order } = poolOf(10, 0.9);
    expect(pool.bulkLimit).toBe(9);
    await Promise.all(Array.from({ length: 9 }, (_, i) => take(`b${i}`, bulk('p'))));
    const tenth = take('b9', bulk('p'));
    await Promise.resolve();
    expect(order).toHaveLength(9);
    await take('urgent', tx('q'));
    expect(order.at(-1)).toBe('urgent');
    expect(pool.open).toBe(10);
    pool.close();
    await expect(tenth).rejects.toThrow(/closed/);
  });

  it('refuses a waiter beyond what it lets wait, and tells every waiter when the site holds its mail', async () => {
    let opened = 0;
    const pool = new SessionPool<Fake>({
      cap: () => 1,
      idleMs: 60_000,
      end: () => {},
      tooMany: (n) => (n >= 2 ? new Error(`${n} wait already`) : null),
    });
    const connect = async (): Promise<Fake> => ({ n: ++opened, dead: false, carried: 0, idleTimer: null });
    await pool.take(tx('p'), () => true, connect);
    const w1 = pool.take(tx('p'), () => true, connect);
    const w2 = pool.take(tx('p'), () => true, connect);
    await expect(pool.take(tx('p'), () => true, connect)).rejects.toThrow('2 wait already');
    pool.refuseWaiting(() => new Error('held'));
    await expect(w1).rejects.toThrow('held');
    await expect(w2).rejects.toThrow('held');
  });

  it('keeps the session left to transactional mail open while bulk mail waits for its share', async () => {
    const { pool, take, ended, opened } = poolOf(2, 0.5);
    expect(pool.bulkLimit).toBe(1);
    await take('bulk', bulk('p'));
    const waiting = take('bulk2', bulk('p'));
    // each transactional message finds the second session, and it stays open between them
    for (let i = 0; i < 3; i++) pool.release(await take(`tx${i}`, tx('q')));
    expect(opened()).toBe(2);
    expect(ended).toEqual([]);
    pool.close();
    await expect(waiting).rejects.toThrow(/closed/);
  });

  it('looks again before each try: a send that waited for a lease hears a hold begun meanwhile', async () => {
    let leases = 0;
    let held = false;
    const pool = new SessionPool<Fake>({
      cap: () => 2,
      idleMs: 60_000,
      end: () => {},
      // the other processes hold the site's cap the first time it is asked, then the site holds its mail
      leases: {
        key: 'lane',
        max: () => 2,
        leases: {
          take: async () => {
            leases++;
            held = true;
            return false;
          },
          give: () => {},
        },
      },
      leaseRetryMs: 1,
    });
    const connect = async (): Promise<Fake> => ({ n: 1, dead: false, carried: 0, idleTimer: null });
    const check = () => {
      if (held) throw new Error('held by the site');
    };
    await expect(pool.take(tx('p'), () => true, connect, check)).rejects.toThrow('held by the site');
    expect(leases).toBe(1);
    expect(pool.open).toBe(0);
  });

  it('counts an ended session against its cap and its lease until its socket has closed, as the server counts it', async () => {
    const closes: (() => void)[] = [];
    const given: string[] = [];
    let opened = 0;
    const pool = new SessionPool<Fake>({
      cap: () => 1,
      idleMs: 60_000,
      end: () => new Promise<void>((resolve) => closes.push(resolve)),
      leases: { key: 'lane', max: () => 1, leases: { take: async () => true, give: (k) => given.push(k) } },
    });
    const connect = async (): Promise<Fake> => ({ n: ++opened, dead: false, carried: 0, idleTimer: null });
    const first = await pool.take(tx('p'), () => true, connect);
    pool.quit(first); // QUIT sent: the server still holds the connection
    let second: Fake | undefined;
    const waiting = pool
      .take(tx('p'), () => true, connect)
      .then((s) => {
        second = s;
      });
    await new Promise((r) => setImmediate(r));
    expect(second).toBeUndefined();
    expect(given).toEqual([]);
    expect(pool.open).toBe(1);
    closes[0](); // the socket closed: the room and the lease come back, and the waiter opens one
    await waiting;
    expect(given).toEqual(['lane']);
    expect(second?.n).toBe(2);
    pool.close();
  });
});
