import { domainOf } from '../../mail/address.ts';
import type { DirectRoute, SourceAddress } from '../routes/config.ts';
import type { SmtpSendError } from '../smtp-pool.ts';
import {
  claimantOf,
  type DeliveryResult,
  isPermanent,
  type OutboundMessage,
  type RecipientResult,
  type Transport,
} from '../transport.ts';
import { type AddressGuard, refusedAnswer, routeGuard, screenHosts } from './address-guard.ts';
import { answerAll, answersOf, transact, type Via, withSiteRetry } from './answers.ts';
import { Lane, type SitePace } from './lanes.ts';
import { type MtaSts, mxMatches, type StsPolicy } from './mta-sts.ts';
import { DnsTemporaryError, type MxHost, type Way } from './mx.ts';
import { type Conn, type ConnectionLeases, Held, meansSlowDown, Temporary, tlsOf } from './session.ts';
import { type Site, siteOf } from './sites.ts';

/**
 * The direct route's transport: each recipient's domain is looked up (mx.ts), and its recipients
 * go to the domain's mail servers in one transaction (their bytes are the same), over a lane
 * (lanes.ts) of the domain's site (sites.ts) from the least busy source address. A server's
 * answer is the recipients' answer: 2xx delivered (this is the last hop), 5xx bounced, 4xx or no
 * answer deferred. An answer that means "slow down" holds the site for that source address for a
 * back-off and halves its connections, which come back one at a time as mail is taken.
 */

/** Finds the way to a domain (MxResolver, or a test's table). */
export interface WayFinder {
  resolve(domain: string): Promise<Way>;
}

/** What a direct route asks of its source addresses' warm-up plans (delivery/direct/transport.ts). */
export interface SourceWarmup {
  /** Counts one message from the address: false when its plan allows no more today (never when `force`). */
  take(
    source: { address: string; warmup?: { startedOn: string; schedule: number[] | null } },
    force: boolean,
  ): Promise<boolean>;
  /** Real milliseconds until the next day of the service's calendar. */
  untilNextDayMs(): number;
}

export interface DirectOptions {
  resolver: WayFinder;
  /** Which addresses its connections may go to (default: the route's, address-guard.ts's routeGuard). */
  guard?: AddressGuard;
  /** Recipient domains' MTA-STS policies (absent: none are looked for). */
  mtaSts?: MtaSts;
  /** Certificates to trust instead of the system's when checking an MX host's (a test network's CA). */
  ca?: string[];
  /** First hold of a site after a "slow down" answer, doubled at each one in a row (up to 15 min). */
  backoffMs?: number;
  /** How long a message may wait for its site's hourly pace before it is held for a retry. */
  maxPaceWaitMs?: number;
  /** The shared pacer of sites' hourly limits (PostgreSQL buckets); absent: each process paces its own. */
  pace?: SitePace;
  /** The source addresses' warm-up plans: a message is counted on the address it leaves from. */
  warmup?: SourceWarmup;
  /** A site's connection cap shared with the other worker processes; absent: each process keeps its own. */
  leases?: ConnectionLeases;
  /** The route's name, in the pace buckets' keys. */
  name?: string;
  /** Told when a site asks to slow down. */
  warn?: (line: string) => void;
  now?: () => number;
}

/** One domain's transaction as it is being made: the lane it goes by and what it carries. */
interface Attempt {
  lane: Lane;
  site: Site;
  /** The MX hosts it may go to (an MTA-STS policy's only, when enforced). */
  hosts: MxHost[];
  to: string[];
  message: OutboundMessage;
  policy: StsPolicy | null;
}

/** The direct route's transport: lanes per site and source address, made as sites are first reached. */
class DirectTransport implements Transport {
  readonly name = 'direct';
  private readonly now: () => number;
  private readonly backoffMs: number;
  private readonly maxPaceWaitMs: number;
  private readonly dialing: { port: number; timeoutMs: number };
  private readonly sources: (SourceAddress | null)[];
  private readonly lanes = new Map<string, Lane[]>();
  private readonly route: DirectRoute;
  private readonly options: DirectOptions;
  private readonly guard: AddressGuard;

  constructor(route: DirectRoute, options: DirectOptions) {
    this.route = route;
    this.options = options;
    this.guard = options.guard ?? routeGuard(route);
    this.now = options.now ?? Date.now;
    this.backoffMs = options.backoffMs ?? 60_000;
    this.maxPaceWaitMs = options.maxPaceWaitMs ?? 15_000;
    this.dialing = {
      port: route.port,
      timeoutMs: route.timeoutSeconds * 1000,
      ...(options.ca ? { ca: options.ca } : {}),
    };
    this.sources = route.sourceAddresses.length > 0 ? route.sourceAddresses : [null];
  }

  async send(message: OutboundMessage): Promise<DeliveryResult> {
    const byDomain = new Map<string, string[]>();
    for (const recipient of message.to) {
      const domain = domainOf(recipient).toLowerCase();
      byDomain.set(domain, [...(byDomain.get(domain) ?? []), recipient]);
    }
    const results = (
      await Promise.all([...byDomain].map(([domain, to]) => this.deliverDomain(domain, to, message)))
    ).flat();
    const first = results.find((r) => r.accepted) ?? results[0];
    return { response: first?.response ?? '', recipients: results };
  }

  async close(): Promise<void> {
    for (const siteLanes of this.lanes.values()) for (const lane of siteLanes) lane.close();
  }

  private lanesOf(site: Site): Lane[] {
    let found = this.lanes.get(site.key);
    if (!found) {
      found = this.sources.map(
        (source) =>
          new Lane(
            site.limits,
            source,
            this.dialing,
            this.backoffMs,
            `site:${this.options.name ?? 'direct'}:${site.key}:${source?.address ?? 'any'}`,
            this.options.leases,
          ),
      );
      this.lanes.set(site.key, found);
    }
    return found;
  }

  private slowedDown(lane: Lane, site: Site, response: string) {
    if (!lane.slowDown(this.now(), response)) return;
    this.options.warn?.(
      `the site ${site.key} asked ${lane.source?.address ?? 'this machine'} to slow down: ${response}; held until ${new Date(lane.suspendedUntil).toISOString()}`,
    );
  }

  /** Every recipient held, not tried: the site's hold (with its answer), or this process's full lane. */
  private heldAnswers(to: string[], site: Site, held: Held) {
    const response = held.busy
      ? `451 4.4.5 held by Posthorn: ${held.reason} (site ${site.key}); tried again after ${new Date(held.until).toISOString()}`
      : `451 4.4.5 held by Posthorn: the site ${site.key} asked to slow down ("${held.reason}"); tried again after ${new Date(held.until).toISOString()}`;
    return answerAll(to, 451, response, { heldUntil: held.until, heldBy: held.busy ? 'posthorn' : 'site' });
  }

  /**
   * The way to `domain` with only the addresses the guard lets through, or every recipient's
   * answer when there is none: a DNS failure defers; a null MX, no such domain, or no address
   * but refused ones bounces, with no connection made.
   */
  private async wayTo(
    domain: string,
    to: string[],
  ): Promise<Extract<Way, { kind: 'hosts' }> | RecipientResult[]> {
    let way: Way;
    try {
      way = await this.options.resolver.resolve(domain);
    } catch (err) {
      const why =
        err instanceof DnsTemporaryError ? err.message : `DNS lookup failed: ${(err as Error).message}`;
      return answerAll(to, 451, `451 4.4.3 ${why}`);
    }
    if (way.kind === 'refused') {
      const nullMx = way.reason.includes('null MX');
      const code = way.code ?? (nullMx ? '556 5.1.10' : '550 5.1.2');
      return answerAll(to, Number(code.slice(0, 3)), `${code} ${way.reason}`);
    }
    const screened = screenHosts(way.hosts, this.guard);
    if (screened.hosts.length > 0) return { ...way, hosts: screened.hosts };
    // our refusal, not the recipient's mailbox's: the address is not suppressed for it
    const { code, response } = refusedAnswer(domain, screened.refused);
    return answerAll(to, code, response, { bounceType: 'block' });
  }

  /** Every recipient at one domain, in one transaction. */
  private async deliverDomain(domain: string, to: string[], message: OutboundMessage) {
    const way = await this.wayTo(domain, to);
    if (Array.isArray(way)) return way;
    const policy = await this.options.mtaSts?.policyOf(domain).catch(() => null);
    const hosts =
      policy?.mode === 'enforce'
        ? way.hosts.filter((h) => policy.mx.some((p) => mxMatches(p, h.host)))
        : way.hosts;
    if (hosts.length === 0)
      return answerAll(
        to,
        451,
        `451 4.7.5 MTA-STS: no MX host of ${domain} (${way.hosts.map((h) => h.host).join(', ')}) fits its enforced policy (${policy?.mx.join(', ')})`,
        {
          via: {
            mx: way.hosts[0].host,
            address: way.hosts[0].addresses[0]?.address ?? '',
            source: null,
            tls: null,
            mta_sts: 'enforce',
          },
        },
      );
    const site = siteOf(
      way.hosts.map((h) => h.host),
      this.route.sites,
    );
    const siteLanes = this.lanesOf(site);
    const t = this.now();
    const ready = siteLanes.filter((lane) => lane.suspendedUntil <= t);
    if (ready.length === 0) {
      const first = siteLanes.reduce((a, b) => (b.suspendedUntil < a.suspendedUntil ? b : a));
      return this.heldAnswers(to, site, new Held(first.suspendedUntil, first.holdReason));
    }
    // the source address least busy at this site (counted from here: the pace's wait is the lane's)
    // whose warm-up allows one more message today
    const lane = await this.warmedLane(ready, message.tags.stream === 'transactional');
    if (!lane)
      return answerAll(
        to,
        451,
        `451 4.4.5 held by Posthorn: the warm-up of ${ready.map((l) => l.source?.address).join(', ')} allows no more marketing today`,
        { heldUntil: this.now() + (this.options.warmup?.untilNextDayMs() ?? 60_000) },
      );
    try {
      return withSiteRetry(
        await this.paceAndSend({ lane, site, hosts, to, message, policy: policy ?? null }),
        site,
        message,
      );
    } finally {
      lane.busy--;
    }
  }

  /**
   * The least busy ready lane (counted busy by the caller's send from here) whose source
   * address's warm-up counts one more message today; none
   * for marketing and automation when every plan is used up (transactional mail then leaves from
   * the least busy all the same, counted: never held).
   */
  private async warmedLane(ready: Lane[], transactional: boolean): Promise<Lane | null> {
    const byBusy = [...ready].sort((a, b) => a.busy - b.busy);
    const warmup = this.options.warmup;
    // counted busy at once (before any wait), so concurrent sends spread over the addresses
    for (const lane of byBusy) {
      lane.busy++;
      if (!warmup || !lane.source || (await warmup.take(lane.source, false))) return lane;
      lane.busy--;
    }
    if (!transactional) return null;
    const lane = byBusy[0];
    lane.busy++;
    if (lane.source) await warmup?.take(lane.source, true);
    return lane;
  }

  private async paceAndSend(attempt: Attempt) {
    const { lane, site, to } = attempt;
    const slot = await lane.paced(this.now, this.maxPaceWaitMs, this.options.pace);
    if (slot !== true) {
      const from = lane.source?.address ?? 'this machine';
      const learned = lane.learnedIntervalMs;
      const pace =
        learned !== null &&
        (lane.limits.messagesPerHour === null || learned > 3_600_000 / lane.limits.messagesPerHour)
          ? `the site ${site.key} takes about ${Math.floor(60_000 / learned)} messages a minute from ${from} (learned from its answer)`
          : `the site ${site.key} takes ${lane.limits.messagesPerHour} messages an hour from ${from}`;
      return answerAll(to, 451, `451 4.4.5 held by Posthorn: ${pace}`, {
        heldUntil: slot,
        heldBy: 'posthorn',
      });
    }
    return this.sendOnLane(attempt);
  }

  /** The transaction on the lane, once more on a new connection when a reused one was gone before a byte left. */
  private async sendOnLane({ lane, site, hosts, to, message, policy }: Attempt) {
    const enforce = policy?.mode === 'enforce';
    // from here it waits in its site's own queue (the lane's, bounded there), not in the process's
    // room: a silent site fills its lane, never the room every other site's mail needs
    message.onSession?.();
    for (let tries = 0; ; tries++) {
      let conn: Conn;
      try {
        conn = await lane.acquire(hosts, enforce, this.now, claimantOf(message));
      } catch (err) {
        if (err instanceof Held) return this.heldAnswers(to, site, err);
        if (!(err instanceof Temporary)) return answerAll(to, 451, `451 4.4.0 ${(err as Error).message}`);
        if (err.slowDown) this.slowedDown(lane, site, err.message);
        if (enforce && policy) return this.policyRefusal(to, hosts, lane, policy.mode, err.message);
        return answerAll(to, err.code, err.message, this.holdWait(lane, err.slowDown));
      }
      const reused = conn.carried > 0;
      const via: Via = {
        mx: conn.mx,
        address: conn.address,
        source: lane.source?.address ?? null,
        tls: tlsOf(conn.connection),
        ...(policy && policy.mode !== 'none' ? { mta_sts: policy.mode } : {}),
      };
      const { done, read } = transact(
        conn,
        message.from,
        to,
        message.raw,
        this.route.transactionTimeoutSeconds * 1000,
        this.route.phaseTimeouts,
      );
      try {
        const info = await done;
        conn.carried++;
        lane.taken();
        lane.release(conn);
        return answersOf(to, info, via);
      } catch (err) {
        const e = err as SmtpSendError;
        // a connection lost before a byte of the message left; a 421 is the site answering
        // (slow down, or go away for now), never a lost connection to try again at once
        const gone = (e.code === 'ECONNECTION' || e.code === 'ESOCKET') && e.responseCode !== 421;
        if (reused && gone && !read() && tries === 0) {
          lane.drop(conn);
          continue;
        }
        return this.failed(lane, site, conn, to, err, via);
      }
    }
  }

  /** A transaction's failure as each recipient's answer; the connection kept (RSET) when only the message was refused. */
  private failed(lane: Lane, site: Site, conn: Conn, to: string[], err: unknown, via: Via) {
    const e = err as SmtpSendError;
    const code = e.responseCode;
    const response = e.response ?? e.message;
    const refusedOnly = (e.code === 'EENVELOPE' || e.code === 'EMESSAGE') && code !== 421;
    if (refusedOnly && !conn.dead) {
      conn.carried++;
      conn.connection.reset((resetErr) => (resetErr ? lane.drop(conn) : lane.release(conn)));
    } else lane.drop(conn);
    const slowDown = meansSlowDown(code, response);
    if (slowDown) this.slowedDown(lane, site, response);
    if (code !== undefined && isPermanent(code) && refusedOnly) {
      // RCPT TO refused every recipient: their addresses; MAIL FROM or DATA: the sender or the
      // content (a block, not the recipients' fault), unless the answer names the address (5.1.x)
      const aboutAddress = e.command === 'RCPT TO' || /\b5\.1\.\d+\b/.test(response);
      return answerAll(to, code, response, { via, bounceType: aboutAddress ? 'hard' : 'block' });
    }
    return answerAll(to, code !== undefined && code >= 400 && code < 500 ? code : 451, response, {
      via,
      ...this.holdWait(lane, slowDown),
    });
  }

  /** A message the site asked to slow down over is tried again once the site's hold is over. */
  private holdWait(lane: Lane, slowDown: boolean): { retryAfterMs?: number } {
    const wait = lane.suspendedUntil - this.now();
    return slowDown && wait > 0 ? { retryAfterMs: wait } : {};
  }

  /**
   * The domain's MTA-STS policy let no connection do (an `enforce` policy: only its MX hosts, over
   * TLS with a certificate valid for the host): deferred, saying which policy refused what.
   */
  private policyRefusal(
    to: string[],
    hosts: MxHost[],
    lane: Lane,
    mode: 'enforce' | 'testing' | 'none',
    why: string,
  ) {
    const domain = domainOf(to[0]).toLowerCase();
    const host = hosts[0];
    return answerAll(
      to,
      451,
      `451 4.7.5 MTA-STS: the ${mode} policy of ${domain} requires TLS with a valid certificate for its MX hosts, and none could be had: ${why}`,
      {
        via: {
          mx: host.host,
          address: host.addresses[0]?.address ?? '',
          source: lane.source?.address ?? null,
          tls: null,
          mta_sts: mode === 'none' ? 'enforce' : mode,
        },
      },
    );
  }
}

export function createDirectTransport(route: DirectRoute, options: DirectOptions): Transport {
  return new DirectTransport(route, options);
}
