/**
 * The one pool of SMTP sessions, for relay and direct routes alike (issue 46): a relay's pool is
 * one of these, a direct route's lane (a site as reached from one source address) another. It
 * keeps the open sessions within a cap, reuses idle ones, and decides who gets a session when
 * several wait: the service's own mail first, then transactional mail, then bulk mail (which may
 * hold at most its share of the sessions); within a class, the project holding the fewest
 * sessions, so no project takes more than its fair share of a site while others wait. What a
 * session is, how it is opened and ended, belongs to the caller (smtp-pool.ts, direct/lanes.ts).
 */

/** The order mail waits in: the service's own (codes, notices), then transactional, then bulk. */
export type Urgency = 'system' | 'transactional' | 'bulk';
const RANK: Record<Urgency, number> = { system: 0, transactional: 1, bulk: 2 };

/** Who asks for a session: its class, and the project it sends for (null: the service's own). */
export interface Claimant {
  urgency: Urgency;
  project: string | null;
}

/** What the pool needs of a session. */
export interface PooledSession {
  dead: boolean;
  /** Transactions it carried (taken or refused). */
  carried: number;
  idleTimer: NodeJS.Timeout | null;
  /** Counted in the leases every worker process shares (given back when it ends). */
  leased?: boolean;
  /** Who holds it now (set by the pool while it is taken). */
  holder?: Claimant | null;
}

/** A cap shared with other worker processes (PostgreSQL: domain/sending/leases.ts). */
export interface SessionLeases {
  take(key: string, max: number): Promise<boolean>;
  give(key: string): void;
}

export interface SessionPoolOptions<S extends PooledSession> {
  /** How many sessions may be open now (a lane's changes as its site slows it down). */
  cap: () => number;
  /** The share of the cap bulk mail may hold at once (0-1]; at least one session is left to the rest. */
  bulkShare?: number;
  /** A session idle for longer is ended politely. */
  idleMs: number;
  /**
   * Ends a session: politely (QUIT) or at once. It counts against the cap (and its lease) until
   * what `end` returns settles: the socket closed, as the server counts it.
   */
  end: (session: S, polite: boolean) => Promise<void> | void;
  /** The cap shared across processes: `key`, `max` and the leases (absent: this process's own). */
  leases?: { key: string; max: () => number; leases: SessionLeases };
  /** How long to wait before asking for a lease again when every process's sum is at the cap. */
  leaseRetryMs?: number;
  /** An error for a waiter beyond what the pool lets wait (absent: any number waits). */
  tooMany?: (waiting: number) => Error | null;
}

/** What a waiting send is given: a session, leave to open one (already counted), or an error. */
type Grant<S> = { session: S } | { open: true } | { error: Error };

interface Waiter<S> {
  claimant: Claimant;
  fits: (session: S) => boolean;
  grant: (g: Grant<S>) => void;
}

export class SessionPool<S extends PooledSession> {
  /** Sessions counted against the cap: open, being opened, or ended and not yet closed. */
  open = 0;
  /** Of those, the ones ended whose sockets have not closed yet. */
  private ending = 0;
  private readonly idle: S[] = [];
  private readonly waiters: Waiter<S>[] = [];
  private readonly held = new Map<string, number>();
  private bulkHeld = 0;
  private closed = false;
  private readonly options: SessionPoolOptions<S>;

  constructor(options: SessionPoolOptions<S>) {
    this.options = options;
  }

  /** How many sends wait for a session. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** The most sessions bulk mail may hold at once: its share of the cap, one left to the rest. */
  get bulkLimit(): number {
    const cap = this.options.cap();
    const share = this.options.bulkShare ?? 1;
    if (share >= 1 || cap < 2) return cap;
    return Math.max(1, Math.min(cap - 1, Math.floor(cap * share)));
  }

  /**
   * A session for `claimant` that `fits` (an idle one, a new one from `connect`, or the next one
   * freed, given by urgency and fairness), held until `release`, `quit` or `drop`. `check` runs
   * before each try (a lane's hold: it throws while the site holds its mail), so a send that waited
   * for a lease looks again before it opens a session.
   */
  async take(
    claimant: Claimant,
    fits: (s: S) => boolean,
    connect: () => Promise<S>,
    check: () => void = () => {},
  ): Promise<S> {
    for (;;) {
      if (this.closed) throw new Error('the session pool is closed');
      check();
      let grant = this.grantNow(claimant, fits);
      if (!grant) {
        const refused = this.options.tooMany?.(this.waiters.length);
        if (refused) throw refused;
        grant = await new Promise<Grant<S>>((resolve) =>
          this.waiters.push({ claimant, fits, grant: resolve }),
        );
      }
      if ('error' in grant) throw grant.error;
      // counted from the grant on (its class's share, its project's sessions), so sends granted
      // together never pass a share that none of them had yet taken
      if ('session' in grant) return this.hold(grant.session, claimant);
      let session: S | null;
      try {
        session = await this.opened(connect);
      } catch (err) {
        this.uncount(claimant);
        throw err;
      }
      if (session) return this.hold(session, claimant);
      this.uncount(claimant);
    }
  }

  /** A session done with its transaction: given to the next waiter it fits, else kept idle. */
  release(session: S): void {
    this.letGo(session);
    if (session.dead) return;
    if (this.closed || this.open - this.ending > this.options.cap()) {
      this.quit(session);
      return;
    }
    const next = this.nextWaiter((w) => w.fits(session));
    if (next) {
      this.count(next.claimant);
      next.grant({ session });
      return;
    }
    session.idleTimer = setTimeout(() => this.quit(session), this.options.idleMs);
    session.idleTimer.unref();
    this.idle.push(session);
    // a waiter it does not fit (another host of the site) gets the room it takes; one that waits
    // for its class's share does not (the session kept for transactional mail stays open)
    const cap = this.options.cap();
    // (one session ending for each such waiter is enough: its room comes when its socket closes)
    const elsewhere = this.waiters.filter((w) => this.mayHold(w.claimant) && !w.fits(session)).length;
    if (this.open >= cap && this.ending < elsewhere) this.quit(session);
  }

  /** Ends a session politely (QUIT). */
  quit(session: S): void {
    this.forget(session, true);
  }

  /** Ends a session that cannot go on (an error, a failed RSET). */
  drop(session: S): void {
    this.forget(session, false);
  }

  /** Every waiting send hears `error` (a lane's site asked to hold its mail). */
  refuseWaiting(error: () => Error): void {
    for (const waiter of this.waiters.splice(0)) waiter.grant({ error: error() });
  }

  /** Ends the idle sessions beyond the cap (a lane's cap was cut). */
  trim(): void {
    while (this.open - this.ending > this.options.cap() && this.idle.length > 0) this.quit(this.idle[0]);
  }

  /** The cap was raised: a waiter may open one more. */
  wake(): void {
    this.pass();
  }

  close(): void {
    this.closed = true;
    for (const session of [...this.idle]) this.quit(session);
    this.refuseWaiting(() => new Error('the session pool is closed'));
  }

  /** What the claimant may have at once: an idle session that fits, or leave to open one. */
  private grantNow(claimant: Claimant, fits: (s: S) => boolean): Grant<S> | null {
    // a send never passes others waiting for what it wants (they came first, or rank before it)
    if (this.waiters.some((w) => RANK[w.claimant.urgency] <= RANK[claimant.urgency])) return null;
    if (!this.mayHold(claimant)) return null;
    const at = this.idle.findIndex(fits);
    if (at !== -1) {
      const [session] = this.idle.splice(at, 1);
      this.count(claimant);
      return { session };
    }
    // an idle session to another host makes room for this one
    // (its room comes when that session's socket has closed: until then this one waits)
    if (this.open >= this.options.cap() && this.idle.length > 0 && this.ending === 0) this.quit(this.idle[0]);
    if (this.open >= this.options.cap()) return null;
    this.open++;
    this.count(claimant);
    return { open: true };
  }

  /** Opens a session the caller was given room for (counted in `open`); null when a lease was not to be had. */
  private async opened(connect: () => Promise<S>): Promise<S | null> {
    const shared = this.options.leases;
    if (shared && !(await shared.leases.take(shared.key, shared.max()))) {
      this.open--;
      await new Promise((resolve) => setTimeout(resolve, this.options.leaseRetryMs ?? 250));
      this.pass();
      return null;
    }
    try {
      const session = await connect();
      if (shared) session.leased = true;
      return session;
    } catch (err) {
      this.open--;
      if (shared) shared.leases.give(shared.key);
      this.pass();
      throw err;
    }
  }

  private mayHold(claimant: Claimant): boolean {
    return claimant.urgency !== 'bulk' || this.bulkHeld < this.bulkLimit;
  }

  /** A session given to a claimant already counted (at its grant). */
  private hold(session: S, claimant: Claimant): S {
    if (session.idleTimer) clearTimeout(session.idleTimer);
    session.idleTimer = null;
    session.holder = claimant;
    return session;
  }

  private count(claimant: Claimant): void {
    const key = claimant.project ?? '';
    this.held.set(key, (this.held.get(key) ?? 0) + 1);
    if (claimant.urgency === 'bulk') this.bulkHeld++;
  }

  private uncount(claimant: Claimant): void {
    const key = claimant.project ?? '';
    const n = (this.held.get(key) ?? 1) - 1;
    if (n > 0) this.held.set(key, n);
    else this.held.delete(key);
    if (claimant.urgency === 'bulk') this.bulkHeld--;
  }

  private letGo(session: S): void {
    const claimant = session.holder;
    if (!claimant) return;
    session.holder = null;
    this.uncount(claimant);
  }

  private forget(session: S, polite: boolean): void {
    this.letGo(session);
    if (session.idleTimer) clearTimeout(session.idleTimer);
    session.idleTimer = null;
    const at = this.idle.indexOf(session);
    if (at !== -1) this.idle.splice(at, 1);
    if (session.dead) return;
    session.dead = true;
    this.ending++;
    const freed = () => {
      this.ending--;
      this.open--;
      if (session.leased) this.options.leases?.leases.give(this.options.leases.key);
      this.pass();
    };
    const closing = this.options.end(session, polite);
    if (closing) void closing.then(freed, freed);
    else freed();
  }

  /** Room came free (a session ended, a lease was refused, the cap rose): the next waiter may open one. */
  private pass(): void {
    if (this.closed || this.waiters.length === 0) return;
    if (this.open >= this.options.cap()) return;
    const next = this.nextWaiter(() => true);
    if (!next) return;
    this.open++;
    this.count(next.claimant);
    next.grant({ open: true });
  }

  /**
   * The waiter to serve next among those `fits` allows: the highest class whose share allows it,
   * and within it the project holding the fewest sessions (the earliest of equals).
   */
  private nextWaiter(fits: (w: Waiter<S>) => boolean): Waiter<S> | undefined {
    let best = -1;
    for (const [i, w] of this.waiters.entries()) {
      if (!fits(w) || !this.mayHold(w.claimant)) continue;
      if (best === -1) {
        best = i;
        continue;
      }
      const b = this.waiters[best].claimant;
      const rank = RANK[w.claimant.urgency] - RANK[b.urgency];
      if (rank < 0 || (rank === 0 && this.heldBy(w.claimant) < this.heldBy(b))) best = i;
    }
    return best === -1 ? undefined : this.waiters.splice(best, 1)[0];
  }

  private heldBy(claimant: Claimant): number {
    return this.held.get(claimant.project ?? '') ?? 0;
  }
}
