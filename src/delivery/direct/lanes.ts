import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { SourceAddress } from '../routes/config.ts';
import { type Claimant, SessionPool } from '../session-pool.ts';
import { endSession, type SmtpSendError } from '../smtp-pool.ts';
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
/**
 * How long a message the lane had no room to queue waits in the database before it is tried again:
 * at least BUSY_BACK_MS, and as long as the site has sat on every connection without giving one
 * back (a tarpit that never answers the final dot), up to MAX_BUSY_BACK_MS, so a stalled site's
 * mail is not claimed again every few seconds for as long as its sessions are held open.
 */
const BUSY_BACK_MS = 5_000;
const MAX_BUSY_BACK_MS = 5 * 60_000;
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
  /** Its sessions: the one session pool's (who gets one next: the service's own mail, then transactional, fair between projects). */
  private readonly pool: SessionPool<Conn>;
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

  constructor(
    limits: SiteLimits,
    source: SourceAddress | null,
    dialing: Dialing,
    backoffMs: number,
    paceKey: string,
    leases?: ConnectionLeases,
  ) {
    this.limits = limits;
    this.paceKey = paceKey;
    this.source = source;
    this.cap = limits.maxConnections;
    this.dialing = dialing;
    this.backoffMs = backoffMs;
    this.firstBackoffMs = backoffMs;
    this.pool = new SessionPool<Conn>({
      cap: () => this.cap,
      // idle sessions of a cap shared across processes close sooner: another may wait for the lease
      idleMs: leases ? SHARED_IDLE_MS : IDLE_MS,
      end: (conn, polite) => endSession(conn.connection, polite),
      ...(leases ? { leases: { key: paceKey, max: () => limits.maxConnections, leases } } : {}),
      leaseRetryMs: LEASE_RETRY_MS,
      tooMany: (waiting) =>
        waiting >= WAITING_PER_CONNECTION * limits.maxConnections + 20
          ? new Held(
              Date.now() + this.busyBackMs(),
              `${waiting} messages already wait for this site's ${this.cap} connections`,
              true,
            )
          : null,
    });
  }

  /** Sessions open to the site from this process. */
  get open(): number {
    return this.pool.open;
  }

  /** Transactions given to the lane and not yet answered: how busy it is. */
  busy = 0;
  /** When a connection last came back from a transaction (or the lane began). */
  private lastBackAt = Date.now();

  /** How long a message finding the lane's queue full waits: see BUSY_BACK_MS. */
  private busyBackMs(): number {
    return Math.min(MAX_BUSY_BACK_MS, Math.max(BUSY_BACK_MS, Date.now() - this.lastBackAt));
  }

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
    this.pool.trim();
    // the messages waiting for a connection are held with the site
    this.pool.refuseWaiting(() => new Held(this.suspendedUntil, this.holdReason));
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
      this.pool.wake();
    }
  }

  /**
   * A session to one of these hosts for `claimant`: an idle one, a new one, or the next one freed
   * (given by the pool's order). `verified`: only over TLS with a certificate valid for the host
   * (MTA-STS `enforce`), never in clear. Throws Held while the site holds its mail.
   */
  async acquire(
    hosts: MxHost[],
    verified = false,
    now: () => number = Date.now,
    claimant: Claimant = { urgency: 'transactional', project: null },
  ): Promise<Conn> {
    if (this.closed) throw new Temporary('451 4.4.0 the route is closing');
    const names = new Set(hosts.map((h) => h.host));
    return this.pool.take(
      claimant,
      (c) => names.has(c.mx) && (c.verified || !verified),
      () => this.connect(hosts, verified),
      // looked at again after a wait for a lease: a hold begun meanwhile holds this message too
      () => {
        if (this.suspendedUntil > now()) throw new Held(this.suspendedUntil, this.holdReason);
      },
    );
  }

  /** A connection done with a transaction: kept for the next, or closed when it carried its share. */
  release(conn: Conn): void {
    this.lastBackAt = Date.now();
    if (conn.dead) return;
    if (conn.carried >= this.limits.messagesPerConnection) this.pool.quit(conn);
    else this.pool.release(conn);
  }

  /** Ends a connection politely (QUIT). */
  quit(conn: Conn): void {
    this.lastBackAt = Date.now();
    this.pool.quit(conn);
  }

  /** Ends a connection that cannot go on (an error, a failed RSET). */
  drop(conn: Conn): void {
    this.lastBackAt = Date.now();
    this.pool.drop(conn);
  }

  close(): void {
    this.closed = true;
    this.pool.close();
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
        // once set up, the pool ends it; before, it was never the pool's
        if (settled) {
          this.drop(conn);
          return;
        }
        settled = true;
        conn.dead = true;
        connection.close();
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
