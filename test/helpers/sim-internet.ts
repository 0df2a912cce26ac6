import { createServer as createHttpsServer } from 'node:https';
import selfsigned from 'selfsigned';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import { freePort } from '../../src/db/embedded.ts';
import { startDnsServer, type TestDnsServer } from './dns-server.ts';

/**
 * A simulated internet on this machine's loopback range: one DNS server (on 127.0.0.1) and mail
 * servers on distinct 127.0.0.x addresses, all at one port (a direct route's `port`), each
 * behaving like a kind of provider. Every server counts what it saw (connections at once,
 * messages per minute, the peer's address and EHLO name, TLS), so a test can tell whether a
 * limit was broken. Nothing listens outside 127.0.0.0/8.
 */

/**
 * The networks a direct route on the simulated internet names in `allow_networks`: its servers
 * are on 127.0.0.0/8, which a direct route refuses otherwise (issue 47). A test of that refusal
 * writes its route without them.
 */
export const SIM_NETWORKS = ['127.0.0.0/8'];

export interface SimBehaviour {
  /** Offer STARTTLS (default true), with a self-signed certificate for `certName` (default: the host). */
  tls?: boolean;
  certName?: string;
  /** A certificate to offer instead (one signed by the network's CA: `SimInternet.certificate`). */
  certificate?: { key: string; cert: string };
  /** More connections at once than this are greeted with 421 and closed. */
  maxConnections?: number;
  /** More messages than this in a rolling minute are deferred at MAIL FROM with a 4.7.28-style answer. */
  perMinute?: number;
  /** 451 to the first attempt of each sender, recipient and peer address (greylisting). */
  greylist?: boolean;
  /** Milliseconds before a message's DATA is answered (to keep messages in flight). */
  delayMs?: number;
  /** Recipients (lower case) refused with this answer at RCPT TO. */
  refuse?: Map<string, { code: number; message: string }>;
  /** A tarpit: takes the data and never answers the final dot (until the server closes). */
  tarpit?: boolean;
  /** Messages a connection may carry: the next MAIL FROM on it gets 421 and the connection ends. */
  messagesPerConnection?: number;
  /** The only TLS version STARTTLS negotiates (`TLSv1`: a server modern clients cannot talk TLS to). */
  tlsVersion?: 'TLSv1';
  /** A command never answered (the session stays open): a server stuck at MAIL FROM or RCPT TO. */
  stallAt?: 'mail' | 'rcpt';
}

export interface SimMessage {
  from: string;
  to: string[];
  /** The whole message; empty on a lean internet (a benchmark's), which keeps the Message-ID only. */
  raw: Buffer;
  messageId: string;
  /** The client's address as the server saw it, and the name it gave in EHLO. */
  peer: string;
  ehlo: string;
  /** Whether the session was encrypted (STARTTLS) when the message came. */
  tls: boolean;
  at: number;
}

export interface SimServer {
  host: string;
  ip: string;
  behaviour: SimBehaviour;
  messages: SimMessage[];
  /** Connections open now, and the most ever open at once (including ones refused with 421). */
  connections: number;
  maxConcurrent: number;
  /** Connections accepted, and those refused at the greeting for the connection cap. */
  accepted: number;
  refusedConnections: number;
  /** Deferrals given: for the rate cap, and for greylisting. */
  rateDeferrals: number;
  greylisted: number;
  /** The most messages taken in any rolling minute. */
  maxPerMinute: number;
  /** Sessions that upgraded to TLS. */
  tlsSessions: number;
  /** Messages whose data a tarpit took and has not answered. */
  held: number;
  close(): Promise<void>;
}

export interface SimInternet {
  dns: TestDnsServer;
  /** The port every mail server listens on. */
  port: number;
  servers: SimServer[];
  /** A mail server named `host` on `ip`, published in DNS (an A record for the host, AAAA for ::1). */
  server(host: string, ip: string, behaviour?: SimBehaviour): Promise<SimServer>;
  /** Publishes `domain`'s MX records: `[preference, host]`; no hosts: a null MX. */
  mx(domain: string, hosts: [number, string][]): void;
  /** Publishes an address record (A, or AAAA for an IPv6 address) for a host with no server behind it (a dead MX), or a domain's own. */
  address(name: string, ip: string): void;
  /** The network's certificate authority (trust it with a transport's `ca`), and a certificate it signs for `name`. */
  ca: string;
  certificate(name: string): Promise<{ key: string; cert: string }>;
  /** The port policy hosts serve HTTPS on (for MtaSts's `port`). */
  httpsPort: number;
  /**
   * Publishes an MTA-STS policy for `domain`: the `_mta-sts` TXT record with `id`, and
   * `mta-sts.<domain>` on `ip` serving `policy` over HTTPS with a certificate the CA signed.
   * `requests` counts the fetches it saw.
   */
  mtaSts(domain: string, ip: string, policy: string, id?: string): Promise<{ requests: number }>;
  /**
   * Publishes an MTA-STS record for `domain` whose policy host on `ip` answers 200 and then sends
   * its body one byte every `everyMs` (2 s), never finishing while the network runs. `requests`
   * counts the fetches it saw.
   */
  mtaStsDrip(domain: string, ip: string, everyMs?: number): Promise<{ requests: number }>;
  close(): Promise<void>;
}

async function certFor(name: string) {
  const pems = await selfsigned.generate([{ name: 'commonName', value: name }], {
    keySize: 2048,
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: name }] }],
  });
  return { key: pems.private, cert: pems.cert };
}

function peerOf(session: SMTPServerSession): string {
  return session.remoteAddress.replace(/^::ffff:/, '');
}

async function startServer(
  host: string,
  ip: string,
  port: number,
  behaviour: SimBehaviour,
  lean: boolean,
): Promise<SimServer> {
  const offerTls = behaviour.tls !== false;
  const pair = offerTls ? (behaviour.certificate ?? (await certFor(behaviour.certName ?? host))) : undefined;
  const seen = new Set<string>();
  const times: number[] = [];
  const sim: SimServer = {
    host,
    ip,
    behaviour,
    messages: [],
    connections: 0,
    maxConcurrent: 0,
    accepted: 0,
    refusedConnections: 0,
    rateDeferrals: 0,
    greylisted: 0,
    maxPerMinute: 0,
    tlsSessions: 0,
    held: 0,
    close: async () => {},
  };
  // MAIL FROMs per session (messagesPerConnection)
  const perSession = new Map<string, number>();
  // a tarpit's unanswered messages: answered 421 when the server closes
  const unanswered = new Map<string, (err: Error) => void>();
  const server = new SMTPServer({
    name: host,
    authOptional: true,
    logger: false,
    ...(pair ? { key: pair.key, cert: pair.cert } : { disabledCommands: ['STARTTLS'] }),
    ...(behaviour.tlsVersion
      ? { minVersion: behaviour.tlsVersion, maxVersion: behaviour.tlsVersion, ciphers: 'DEFAULT:@SECLEVEL=0' }
      : {}),
    onConnect(_session, callback) {
      sim.connections++;
      sim.maxConcurrent = Math.max(sim.maxConcurrent, sim.connections);
      if (behaviour.maxConnections !== undefined && sim.connections > behaviour.maxConnections) {
        sim.refusedConnections++;
        return callback(
          Object.assign(new Error(`4.7.0 ${host}: too many connections from your IP, try again later`), {
            responseCode: 421,
          }),
        );
      }
      sim.accepted++;
      callback();
    },
    onClose(session) {
      sim.connections--;
      perSession.delete(session.id);
      // a client that gave up on a tarpit: its message is no longer held
      if (unanswered.delete(session.id)) sim.held--;
    },
    onSecure(_socket, _session, callback) {
      sim.tlsSessions++;
      callback();
    },
    onMailFrom(_address, session, callback) {
      if (behaviour.stallAt === 'mail') return;
      const carried = (perSession.get(session.id) ?? 0) + 1;
      perSession.set(session.id, carried);
      if (behaviour.messagesPerConnection !== undefined && carried > behaviour.messagesPerConnection)
        return callback(
          Object.assign(new Error(`4.7.0 ${host}: too many messages on one connection, closing`), {
            responseCode: 421,
          }),
        );
      const now = Date.now();
      while (times.length > 0 && times[0] <= now - 60_000) times.shift();
      if (behaviour.perMinute !== undefined && times.length >= behaviour.perMinute) {
        sim.rateDeferrals++;
        return callback(
          Object.assign(
            new Error(
              '4.7.28 Our system has detected an unusual rate of unsolicited mail originating from your IP address. Try again later.',
            ),
            { responseCode: 450 },
          ),
        );
      }
      callback();
    },
    onRcptTo(address, session, callback) {
      if (behaviour.stallAt === 'rcpt') return;
      const refusal = behaviour.refuse?.get(address.address.toLowerCase());
      if (refusal) return callback(Object.assign(new Error(refusal.message), { responseCode: refusal.code }));
      const triple = `${session.envelope.mailFrom ? session.envelope.mailFrom.address : ''}|${address.address}|${peerOf(session)}`;
      if (behaviour.greylist && !seen.has(triple)) {
        seen.add(triple);
        sim.greylisted++;
        return callback(
          Object.assign(new Error('4.7.1 Greylisted, please try again later'), { responseCode: 451 }),
        );
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      let head = '';
      stream.on('data', (c: Buffer) => {
        if (head.length < 8192) head += c.toString('latin1');
        if (!lean) chunks.push(c);
      });
      stream.on('end', () => {
        const now = Date.now();
        times.push(now);
        while (times[0] <= now - 60_000) times.shift();
        sim.maxPerMinute = Math.max(sim.maxPerMinute, times.length);
        sim.messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks),
          messageId: /^Message-ID:\s*(<[^>]+>)/im.exec(head)?.[1] ?? '',
          peer: peerOf(session),
          ehlo: session.hostNameAppearsAs,
          tls: session.secure,
          at: now,
        });
        const answer = () => callback(null, `2.0.0 OK queued as ${sim.messages.length} by ${host}`);
        if (behaviour.tarpit) {
          sim.messages.pop();
          sim.held++;
          const refuse = (err: Error) => {
            sim.held--;
            callback(err);
          };
          unanswered.set(session.id, refuse);
          return;
        }
        if (behaviour.delayMs) setTimeout(answer, behaviour.delayMs);
        else answer();
      });
    },
  });
  server.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, ip, () => resolve());
  });
  sim.close = () => {
    for (const refuse of unanswered.values())
      refuse(Object.assign(new Error('4.3.2 shutting down'), { responseCode: 421 }));
    unanswered.clear();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return sim;
}

/**
 * The DNS server and an empty internet; add servers and domains to it. `lean` servers keep only
 * each message's Message-ID (a benchmark's hundred thousand); `port` for every mail server (25
 * for a benchmark Postfix delivers to) and `dns` where the resolver listens.
 */
export async function startSimInternet(
  options: { lean?: boolean; port?: number; dns?: { address: string; port: number } } = {},
): Promise<SimInternet> {
  const dns = await startDnsServer(options.dns);
  const port = options.port ?? (await freePort());
  const httpsPort = await freePort();
  const servers: SimServer[] = [];
  const closers: (() => Promise<void>)[] = [];
  const authority = await selfsigned.generate([{ name: 'commonName', value: 'Simulated Internet CA' }], {
    keySize: 2048,
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true },
    ],
  });
  const certificate = async (name: string) => {
    const pems = await selfsigned.generate([{ name: 'commonName', value: name }], {
      keySize: 2048,
      algorithm: 'sha256',
      ca: { key: authority.private, cert: authority.cert },
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: name }] }],
    });
    return { key: pems.private, cert: pems.cert };
  };
  const publish = (name: string, record: Parameters<TestDnsServer['zone']['set']>[1][number]) =>
    dns.zone.set(name, [...(dns.zone.get(name) ?? []), record]);
  const addressRecord = (ip: string) =>
    ip.includes(':') ? { type: 'AAAA' as const, address: ip } : { type: 'A' as const, address: ip };
  return {
    dns,
    port,
    servers,
    async server(host, ip, behaviour = {}) {
      const sim = await startServer(host, ip, port, behaviour, options.lean === true);
      servers.push(sim);
      publish(host, addressRecord(ip));
      return sim;
    },
    mx(domain, hosts) {
      if (hosts.length === 0) publish(domain, { type: 'MX', exchange: '', priority: 0 });
      for (const [priority, exchange] of hosts) publish(domain, { type: 'MX', exchange, priority });
    },
    address(name, ip) {
      publish(name, addressRecord(ip));
    },
    ca: authority.cert,
    certificate,
    httpsPort,
    async mtaSts(domain, ip, policy, id = '20261126') {
      const host = `mta-sts.${domain}`;
      const seen = { requests: 0 };
      const web = createHttpsServer(await certificate(host), (req, res) => {
        seen.requests++;
        if (req.url !== '/.well-known/mta-sts.txt') {
          res.writeHead(404).end();
          return;
        }
        res.writeHead(200, { 'content-type': 'text/plain' }).end(policy);
      });
      await new Promise<void>((resolve) => web.listen(httpsPort, ip, () => resolve()));
      closers.push(() => new Promise<void>((resolve) => web.close(() => resolve())));
      dns.zone.set(`_mta-sts.${domain}`, [{ type: 'TXT', data: `v=STSv1; id=${id}` }]);
      publish(host, { type: 'A', address: ip });
      return seen;
    },
    async mtaStsDrip(domain, ip, everyMs = 2_000) {
      const host = `mta-sts.${domain}`;
      const seen = { requests: 0 };
      const timers = new Set<NodeJS.Timeout>();
      const web = createHttpsServer(await certificate(host), (_req, res) => {
        seen.requests++;
        res.writeHead(200, { 'content-type': 'text/plain' });
        const body = 'version: STSv1\nmode: enforce\nmx: nowhere.invalid\nmax_age: 86400\n';
        let at = 0;
        const timer = setInterval(() => res.write(body[at++ % body.length]), everyMs);
        timers.add(timer);
        res.on('close', () => {
          clearInterval(timer);
          timers.delete(timer);
        });
      });
      await new Promise<void>((resolve) => web.listen(httpsPort, ip, () => resolve()));
      closers.push(
        () =>
          new Promise<void>((resolve) => {
            for (const timer of timers) clearInterval(timer);
            web.closeAllConnections();
            web.close(() => resolve());
          }),
      );
      dns.zone.set(`_mta-sts.${domain}`, [{ type: 'TXT', data: 'v=STSv1; id=20261207' }]);
      publish(host, { type: 'A', address: ip });
      return seen;
    },
    async close() {
      await Promise.all([...servers.map((s) => s.close()), ...closers.map((c) => c())]);
      await dns.close();
    },
  };
}
