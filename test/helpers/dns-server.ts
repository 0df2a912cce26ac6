import { Resolver } from 'node:dns/promises';
import dns2 from 'dns2';
import { authenticate } from 'mailauth';
import { freePort } from '../../src/db/embedded.ts';

const { Packet } = dns2 as unknown as { Packet: any };

export type ZoneRecord =
  | { type: 'TXT'; data: string | string[] }
  | { type: 'MX'; exchange: string; priority: number }
  | { type: 'CNAME'; domain: string }
  | { type: 'A'; address: string }
  | { type: 'AAAA'; address: string };

export interface TestDnsServer {
  /** `host:port` for POSTHORN_DNS_SERVERS. */
  address: string;
  /** name (lower case, no trailing dot) → records; edit freely between lookups. */
  zone: Map<string, ZoneRecord[]>;
  /** Names answered with SERVFAIL. */
  failing: Set<string>;
  close(): Promise<void>;
}

/** A real authoritative DNS server on 127.0.0.1 (UDP and TCP, dns2) serving a zone the test writes. */
export async function startDnsServer(): Promise<TestDnsServer> {
  const zone = new Map<string, ZoneRecord[]>();
  const failing = new Set<string>();
  const handle = (request: any, send: (r: any) => void) => {
    const response = Packet.createResponseFromRequest(request);
    const [question] = request.questions;
    const name = String(question.name).toLowerCase().replace(/\.$/, '');
    if (failing.has(name)) {
      response.header.rcode = Packet.RCODE.SERVFAIL;
      return send(response);
    }
    const records = zone.get(name);
    if (!records) {
      response.header.rcode = Packet.RCODE.NXDOMAIN;
      return send(response);
    }
    const base = { name: question.name, class: Packet.CLASS.IN, ttl: 60 };
    for (const r of records) {
      if (r.type === 'CNAME') response.answers.push({ ...base, type: Packet.TYPE.CNAME, domain: r.domain });
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
    send(response);
  };
  const server = (dns2 as any).createServer({ udp: true, tcp: true, handle });
  server.on('requestError', () => {});
  server.on('error', () => {});
  const port = await freePort();
  await server.listen({ udp: { port, address: '127.0.0.1' }, tcp: { port, address: '127.0.0.1' } });
  return { address: `127.0.0.1:${port}`, zone, failing, close: () => server.close() };
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
