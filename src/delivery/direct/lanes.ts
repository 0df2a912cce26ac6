import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { SourceAddress } from '../routes/config.ts';
import type { SmtpSendError } from '../smtp-pool.ts';
import type { MxHost } from './mx.ts';
import {
  type Conn,
  type ConnectionLeases,
  type Dialing,
  Held,
  isVerified,
  meansSlowDown,
  Temporary,
  tlsFailed,
} from './session.ts';
import type { SiteLimits } from './sites.ts';

/**
 * A lane is one site as reached from one source address: its open connections (within the site's
 * limits), its hourly pace, and its back-off after the site asked to slow down. The direct
 * transport (transport.ts) takes a connection from the lane for each transaction and gives it back.
 */

/** How long a lane whose site is at its cap across processes waits before it asks again. */
const LEASE_RETRY_MS = 250;

const IDLE_MS = 10_000;
/** Idle connections of a cap shared across processes close sooner: another process may be waiting for the lease. */
const SHARED_IDLE_MS = 1_000;
/** Messages that may wait for a lane's connections, per connection it may open (and at least 20 more). */
const WAITING_PER_CONNECTION = 10;
/** How long a message the lane had no room to queue waits in the database before it is tried again. */
const BUSY_BACK_MS = 5_000;
const MAX_BACKOFF_MS = 15 * 60_000;
/** The window a site's rate is learned over, and the margin kept under it. */
const PACE_WINDOW_MS = 60_000;
const PACE_MARGIN = 0.03;
/** The widest learned spacing: one message in ten minutes. */
const MAX_LEARNED_MS = 600_000;
const ABOUT_RATE = /\b4\.7\.(28|650)\b|TSS0\d|rate|too many messages|throttl/i;
/** After a slow-down, one connection comes back per this many messages taken. */
const RAMP_EVERY = 20;

/**
 * Takes one slot of the bucket `key` (one every `intervalMs`, shared by every worker process)
 * within `horizonMs`: `taken` with its time, or the time the next one is free.
 */
export type SitePace = (
  key: string,
  intervalMs: number,
  horizonMs: number,
) => Promise<{ taken: boolean; atMs: number }>;

export class Lane {
  readonly limits: SiteLimits;
  /** The lane's pace bucket: route, site and source address. */
  readonly paceKey: string;
  readonly source: SourceAddress | null;
  /** Connections allowed now: the site's, halved by each slow-down, regained as mail is taken. */
  cap: number;
  open = 0;
  private readonly idle: Conn[] = [];
  private readonly waiters: (() => void)[] = [];
  private closed = false;
  /** Until when the site is held for this source after it asked to slow down, and its answer. */
  suspendedUntil = 0;
  holdReason = '';
  private backoffMs: number;
  private readonly firstBackoffMs: number;
  private takenSinceCut = 0;
  /** When the next message may start, by the hourly pace. */
  private nextSlotAt = 0;
  /** When the site took each message of the last minute. */
  private readonly acceptedAt: number[] = [];
  /**
   * The spacing the site's own rate answer taught (null: none yet): what it took in the minute
   * before it said "too many", spread over a minute; doubled at each rate refusal after that.
   */
  learnedIntervalMs: number | null = null;

  /**
   * A rate refusal (Google's 4.7.28, Microsoft's 4.7.650, "too many messages") teaches the lane the
   * site's pace: the messages it took in the last minute are its rate per minute (KumoMTA's
   * traffic shaping automation reacts the same way), so after the hold the lane keeps under it
   * instead of meeting the limit again; refused again while so paced, the spacing doubles. A
   * refusal for too many connections teaches nothing here: the connections are halved.
   */
  private learnPace(now: number, reason: string): void {
    if (!ABOUT_RATE.test(reason) || /connections/i.test(reason)) return;
    if (this.learnedIntervalMs !== null) {
      this.learnedIntervalMs = Math.min(this.learnedIntervalMs * 2, MAX_LEARNED_MS);
      return;
    }
    const lastMinute = this.acceptedAt.filter((at) => at > now - PACE_WINDOW_MS).length;
    if (lastMinute > 0) this.learnedIntervalMs = (PACE_WINDOW_MS / lastMinute) * (1 + PACE_MARGIN);
  }
  private readonly dialing: Dialing;
  private readonly leases: ConnectionLeases | undefined;

  constructor(
    limits: SiteLimits,
    source: SourceAddress | null,
    dialing: Dialing,
    backoffMs: number,
    paceKey: string,
    leases?: ConnectionLeases,
  ) {
    this.leases = leases;
    this.limits = limits;
    this.paceKey = paceKey;
    this.source = source;
    this.cap = limits.maxConnections;
    this.dialing = dialing;
    this.backoffMs = backoffMs;
    this.firstBackoffMs = backoffMs;
  }

  /** Transactions given to the lane and not yet answered: how busy it is. */
  busy = 0;

  /**
   * A slot by the site's hourly pace, waited for (true); when it is more than `maxWaitMs` away,
   * the time the next one is free (the message is held until then rather than kept waiting). The
   * slots are the shared pacer's (`SitePace`: every worker process's), else this process's own.
   */
  async paced(now: () => number, maxWaitMs: number, pace?: SitePace): Promise<true | number> {
    const perHour = this.limits.messagesPerHour;
    if (perHour === null && this.learnedIntervalMs === null) return true;
    const intervalMs = Math.max(perHour === null ? 0 : 3_600_000 / perHour, this.learnedIntervalMs ?? 0);
    let at: number;
    if (pace) {
      const slot = await pace(this.paceKey, intervalMs, maxWaitMs);
      if (!slot.taken) return slot.atMs;
      at = slot.atMs;
    } else {
      at = Math.max(now(), this.nextSlotAt);
      if (at - now() > maxWaitMs) return at;
      this.nextSlotAt = at + intervalMs;
    }
    const wait = at - now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    return true;
  }

  /**
   * The site asked to slow down: held for the back-off, connections halved, and every message
   * waiting for a connection held with it. A refusal while the hold stands (the rest of one burst)
   * changes nothing; the back-off doubles only when the site refuses again after a hold, before it
   * took a message (`taken` starts it over). Returns whether a new hold began.
   */
  slowDown(now: number, reason: string): boolean {
    if (now < this.suspendedUntil) return false;
    this.learnPace(now, reason);
    this.suspendedUntil = now + this.backoffMs;
    this.holdReason = reason;
    this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
    this.cap = Math.max(1, Math.floor(this.cap / 2));
    this.takenSinceCut = 0;
    // connections beyond the new cap close as they come back; idle ones now
    while (this.open > this.cap && this.idle.length > 0) this.quit(this.idle[0]);
    // the messages waiting for a connection look again, and find the hold
    for (const waiter of this.waiters.splice(0)) waiter();
    return true;
  }

  /** A message taken: the back-off starts over, and a connection comes back every RAMP_EVERY. */
  taken(): void {
    const now = Date.now();
    this.acceptedAt.push(now);
    while (this.acceptedAt.length > 0 && this.acceptedAt[0] <= now - PACE_WINDOW_MS) this.acceptedAt.shift();
    this.backoffMs = this.firstBackoffMs;
    if (this.cap >= this.limits.maxConnections) return;
    if (++this.takenSinceCut >= RAMP_EVERY) {
      this.takenSinceCut = 0;
      this.cap++;
      this.wake();
    }
  }

  /**
   * A connection to one of these hosts: an idle one, a new one, or the next one freed. `verified`:
   * only over TLS with a certificate valid for the host (MTA-STS `enforce`), never in clear.
   */
  async acquire(hosts: MxHost[], verified = false, now: () => number = Date.now): Promise<Conn> {
    const names = new Set(hosts.map((h) => h.host));
    for (;;) {
      if (this.closed) throw new Temporary('451 4.4.0 the route is closing');
      if (this.suspendedUntil > now()) throw new Held(this.suspendedUntil, this.holdReason);
      const at = this.idle.findIndex((c) => names.has(c.mx) && (c.verified || !verified));
      if (at !== -1) {
        const [conn] = this.idle.splice(at, 1);
        if (conn.idleTimer) clearTimeout(conn.idleTimer);
        conn.idleTimer = null;
        return conn;
      }
      if (this.open < this.cap) {
        if (!this.leases) return this.connect(hosts, verified);
        // the site's cap is shared with the other worker processes: a lease first, then the socket
        if (!(await this.leases.take(this.paceKey, this.limits.maxConnections))) {
          await this.waitAWhile(LEASE_RETRY_MS);
          continue;
        }
        try {
          const conn = await this.connect(hosts, verified);
          conn.leased = true;
          return conn;
        } catch (err) {
          this.leases.give(this.paceKey);
          this.wake();
          throw err;
        }
      }
      // an idle connection to another of the site's hosts makes room for this one
      if (this.idle.length > 0) this.quit(this.idle[0]);
      else if (this.waiters.length >= WAITING_PER_CONNECTION * this.limits.maxConnections + 20)
        throw new Held(
          now() + BUSY_BACK_MS,
          `${this.waiters.length} messages already wait for this site's ${this.cap} connections`,
          true,
        );
      else await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /** A connection done with a transaction: kept for the next, or closed when it carried its share. */
  release(conn: Conn): void {
    if (conn.dead) return;
    if (this.closed || conn.carried >= this.limits.messagesPerConnection || this.open > this.cap) {
      this.quit(conn);
      return;
    }
    conn.idleTimer = setTimeout(() => this.quit(conn), this.leases ? SHARED_IDLE_MS : IDLE_MS);
    conn.idleTimer.unref();
    this.idle.push(conn);
    this.wake();
  }

  /** Ends a connection politely (QUIT). */
  quit(conn: Conn): void {
    this.forget(conn, () => conn.connection.quit());
  }

  /** Ends a connection that cannot go on (an error, a failed RSET). */
  drop(conn: Conn): void {
    this.forget(conn, () => conn.connection.close());
  }

  close(): void {
    this.closed = true;
    for (const conn of [...this.idle]) this.quit(conn);
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  /** Waits for a connection to come free, or `ms`, whichever is first. */
  private waitAWhile(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        const at = this.waiters.indexOf(done);
        if (at !== -1) this.waiters.splice(at, 1);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.push(done);
    });
  }

  private forget(conn: Conn, end: () => void): void {
    if (conn.idleTimer) clearTimeout(conn.idleTimer);
    conn.idleTimer = null;
    const at = this.idle.indexOf(conn);
    if (at !== -1) this.idle.splice(at, 1);
    if (conn.dead) return;
    conn.dead = true;
    end();
    this.open--;
    if (conn.leased) this.leases?.give(this.paceKey);
    this.wake();
  }

  private wake(): void {
    this.waiters.shift()?.();
  }

  /** Opens a connection to the first of the hosts and addresses that greets us (RFC 5321 §5.1). */
  private async connect(hosts: MxHost[], verified: boolean): Promise<Conn> {
    const tried: string[] = [];
    let slowDown = false;
    const family = this.source ? (this.source.address.includes(':') ? 6 : 4) : null;
    for (const mx of hosts) {
      // a source address binds one family: the other's addresses are out of reach from it
      for (const { address } of mx.addresses.filter((a) => family === null || a.family === family)) {
        try {
          return await this.dial(mx.host, address, verified, false);
        } catch (err) {
          let e = err as SmtpSendError;
          // opportunistic TLS (RFC 7435): a handshake that fails is tried once in clear, unless
          // the domain's MTA-STS policy enforces TLS
          if (!verified && tlsFailed(e))
            try {
              return await this.dial(mx.host, address, false, true);
            } catch (clearErr) {
              e = clearErr as SmtpSendError;
            }
          tried.push(`${mx.host} [${address}]: ${e.response ?? e.message}`);
          slowDown ||= meansSlowDown(e.responseCode, e.response ?? '');
        }
      }
    }
    throw new Temporary(
      tried.length > 0
        ? `451 4.4.1 no mail server took a connection: ${tried.join('; ')}`
        : `451 4.4.1 no mail server has an IPv${family} address to reach from ${this.source?.address}`,
      451,
      slowDown,
    );
  }

  private dial(host: string, address: string, verified: boolean, inClear: boolean): Promise<Conn> {
    const { port, timeoutMs, ca } = this.dialing;
    const connection = new SMTPConnection({
      host: address,
      port,
      name: this.source?.ehlo,
      localAddress: this.source?.address,
      // STARTTLS whenever offered; an MX host's certificate is often not valid for its name, and
      // encrypting anyway beats sending in clear (the attempt records it as unverified), unless
      // the domain's MTA-STS policy enforces TLS with a valid certificate
      ...(verified ? { requireTLS: true } : inClear ? { ignoreTLS: true } : { opportunisticTLS: true }),
      tls: { rejectUnauthorized: verified, servername: host, ...(ca ? { ca } : {}) },
      connectionTimeout: Math.min(30_000, timeoutMs),
      greetingTimeout: Math.min(60_000, timeoutMs),
      socketTimeout: timeoutMs,
    });
    this.open++;
    const conn: Conn = {
      connection,
      mx: host,
      address,
      carried: 0,
      verified: false,
      dead: false,
      idleTimer: null,
    };
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (err: Error) => {
        this.drop(conn);
        if (settled) return;
        settled = true;
        reject(err);
      };
      // after the greeting, an error ends the connection; a transaction in progress hears of it itself
      connection.on('error', fail);
      // a server that refuses at the greeting (421) closes at once: its answer, reported as an
      // error in the same turn, is the better reason
      connection.once('end', () => setImmediate(() => fail(new Error('the server closed the connection'))));
      connection.connect((err) => {
        if (err) return fail(err);
        settled = true;
        conn.verified = isVerified(connection);
        resolve(conn);
      });
    });
  }
}
