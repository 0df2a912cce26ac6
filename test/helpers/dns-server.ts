import { Resolver } from 'node:dns/promises';
import dns2 from 'dns2';
import { authenticate } from 'mailauth';
import { freePort } from '../../src/db/embedded.ts';

const { Packet } = dns2 as unknown as { Packet: any };

/** A record of the zone; `ttl` in seconds (default 60). An MX with `exchange: ''` is a null MX. */
export type ZoneRecord = (
  | { type: 'TXT'; data: string | string[] }
  | { type: 'MX'; exchange: string; priority: number }
  | { type: 'CNAME'; domain: string }
  | { type: 'PTR'; domain: string }
  | { type: 'A'; address: string }
  | { type: 'AAAA'; address: string }
) & { ttl?: number };

export interface TestDnsServer {
  /** `host:port` for POSTHORN_DNS_SERVERS. */
  address: string;
  /** name (lower case, no trailing dot) → records; edit freely between lookups. */
  zone: Map<string, ZoneRecord[]>;
  /** Names answered with SERVFAIL. */
  failing: Set<string>;
  /** Every question asked, as `TYPE name` (A, AAAA, MX, TXT, ...), in order. */
  asked: string[];
  /** The SOA minimum given with negative answers (NXDOMAIN, no records of the type), in seconds. */
  negativeTtl: number;
  close(): Promise<void>;
}

/**
 * A real authoritative DNS server on 127.0.0.1 (UDP and TCP, dns2) serving a zone the test writes;
 * `at` another loopback address and port (a benchmark's resolver at port 53, for resolv.conf).
 */
export async function startDnsServer(at: { address?: string; port?: number } = {}): Promise<TestDnsServer> {
  const zone = new Map<string, ZoneRecord[]>();
  const failing = new Set<string>();
  const asked: string[] = [];
  const typeName = (code: number) =>
    Object.entries(Packet.TYPE as Record<string, number>).find(([, c]) => c === code)?.[0] ?? String(code);
  const handle = (request: any, send: (r: any) => void) => {
    const response = Packet.createResponseFromRequest(request);
    const [question] = request.questions;
    const name = String(question.name).toLowerCase().replace(/\.$/, '');
    asked.push(`${typeName(question.type)} ${name}`);
    const soa = () =>
      response.authorities.push({
        name: question.name,
        type: Packet.TYPE.SOA,
        class: Packet.CLASS.IN,
        ttl: served.negativeTtl,
        primary: 'ns.test',
        admin: 'hostmaster.test',
        serial: 1,
        refresh: 3600,
        retry: 600,
        expiration: 86400,
        minimum: served.negativeTtl,
      });
    if (failing.has(name)) {
      response.header.rcode = Packet.RCODE.SERVFAIL;
      return send(response);
    }
    const records = zone.get(name);
    if (!records) {
      response.header.rcode = Packet.RCODE.NXDOMAIN;
      soa();
      return send(response);
    }
    for (const r of records) {
      const base = { name: question.name, class: Packet.CLASS.IN, ttl: r.ttl ?? 60 };
      if (r.type === 'CNAME') response.answers.push({ ...base, type: Packet.TYPE.CNAME, domain: r.domain });
      else if (r.type === 'PTR' && question.type === Packet.TYPE.PTR)
        response.answers.push({ ...base, type: Packet.TYPE.PTR, domain: r.domain });
      else if (r.type === 'TXT' && question.type === Packet.TYPE.TXT)
        response.answers.push({ ...base, type: Packet.TYPE.TXT, data: r.data });
      else if (r.type === 'A' && question.type === Packet.TYPE.A)
        response.answers.push({ ...base, type: Packet.TYPE.A, address: r.address });
      else if (r.type === 'AAAA' && question.type === Packet.TYPE.AAAA)
        response.answers.push({ ...base, type: Packet.TYPE.AAAA, address: r.address });
      else if (r.type === 'MX' && question.type === Packet.TYPE.MX) {
        response.answers.push({ ...base, type: Packet.TYPE.MX, exchange: r.exchange, priority: r.priority });
      }
    }
    if (response.answers.length === 0) soa();
    send(response);
  };
  const server = (dns2 as any).createServer({ udp: true, tcp: true, handle });
  server.on('requestError', () => {});
  server.on('error', () => {});
  const port = at.port ?? (await freePort());
  const address = at.address ?? '127.0.0.1';
  await server.listen({ udp: { port, address }, tcp: { port, address } });
  const served: TestDnsServer = {
    address: `${address}:${port}`,
    zone,
    failing,
    asked,
    negativeTtl: 60,
    close: () => server.close(),
  };
  return served;
}

/**
 * What a receiving server concludes about a message (mailauth's SPF, DKIM, DMARC, ARC), as if it
 * had arrived from 127.0.0.1 with this envelope sender, every lookup going to the test DNS server.
 */
export async function authenticateAtReceiver(
  dns: TestDnsServer,
  message: { raw: Buffer | string; from: string },
): Promise<any> {
  const resolver = new Resolver();
  resolver.setServers([dns.address]);
  return authenticate(message.raw, {
    ip: '127.0.0.1',
    helo: 'posthorn.test',
    sender: message.from,
    mta: 'sink.test',
    resolver: (name: string, type: string) => resolver.resolve(name, type as 'TXT'),
  });
}
