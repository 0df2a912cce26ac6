import { Resolver, lookup as systemLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import net, { isIP, type LookupFunction, type Socket } from 'node:net';
import tls, { type PeerCertificate, type TLSSocket } from 'node:tls';
import { isLocalName } from './types.ts';

/**
 * The network steps of the readiness checks, on the server's own resolvers (POSTHORN_DNS_SERVERS,
 * else the system's): a name is looked up as receivers and browsers would find it, so a test's
 * DNS server on 127.0.0.1 answers them all. Every step has a deadline.
 */

const TIMEOUT_MS = 5_000;

/** The first address of `host` (a literal is itself; a local name is 127.0.0.1). */
export async function addressOf(
  host: string,
  servers: string[],
): Promise<{ address: string; family: 4 | 6 }> {
  const bare = host.replace(/^\[|\]$/g, '');
  const literal = isIP(bare);
  if (literal) return { address: bare, family: literal as 4 | 6 };
  if (isLocalName(bare)) return { address: '127.0.0.1', family: 4 };
  if (servers.length === 0) {
    const found = await systemLookup(bare);
    return { address: found.address, family: found.family as 4 | 6 };
  }
  const resolver = new Resolver({ timeout: 2_000, tries: 2 });
  resolver.setServers(servers);
  const v4 = await resolver.resolve4(bare).catch(() => [] as string[]);
  if (v4.length > 0) return { address: v4[0], family: 4 };
  const v6 = await resolver.resolve6(bare).catch(() => [] as string[]);
  if (v6.length > 0) return { address: v6[0], family: 6 };
  throw Object.assign(new Error(`${bare} has no A or AAAA record`), { code: 'ENOTFOUND' });
}

/** A `lookup` for sockets that asks the server's resolvers. */
function lookupOn(servers: string[]): LookupFunction {
  return (hostname, options, callback) => {
    addressOf(hostname, servers).then(
      (found) =>
        options.all
          ? (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [found])
          : callback(null, found.address, found.family),
      (err) => callback(err as NodeJS.ErrnoException, '', 0),
    );
  };
}

/** GET `url` (http or https, the certificate checked): its status and the start of its body. */
export function httpGet(url: string, servers: string[]): Promise<{ status: number; body: string }> {
  const target = new URL(url);
  const client = target.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.get(
      target,
      {
        lookup: lookupOn(servers),
        timeout: TIMEOUT_MS,
        agent: false,
        headers: { accept: 'application/json' },
      },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          if (body.length < 2_000) body += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        response.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new Error(`no answer from ${target.host} within 5 s`)));
    request.on('error', reject);
  });
}

export interface CertificateSeen {
  subject: string;
  issuer: string;
  validTo: Date;
}

const one = (value: string | string[] | undefined): string => (Array.isArray(value) ? value[0] : value) ?? '';

const seen = (cert: PeerCertificate): CertificateSeen => ({
  subject: one(cert.subject?.CN),
  issuer: one(cert.issuer?.CN) || one(cert.issuer?.O),
  validTo: new Date(cert.valid_to),
});

/** A TLS handshake with `host` at `port` checked as a browser would: its certificate, or why not. */
export async function tlsCertificate(
  host: string,
  port: number,
  servers: string[],
): Promise<CertificateSeen> {
  const { address } = await addressOf(host, servers);
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: address, port, servername: host, timeout: TIMEOUT_MS });
    socket.once('secureConnect', () => {
      resolve(seen(socket.getPeerCertificate()));
      socket.end();
    });
    socket.once('timeout', () =>
      socket.destroy(new Error(`no TLS handshake with ${host}:${port} within 5 s`)),
    );
    socket.once('error', reject);
  });
}

/** Reads SMTP replies from a socket: each call waits for the next whole reply (its last line). */
function replies(socket: Socket) {
  let buffer = '';
  const waiting: ((line: string) => void)[] = [];
  const ready: string[] = [];
  const onData = (chunk: Buffer) => {
    buffer += chunk.toString('latin1');
    for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
      const line = buffer.slice(0, i).replace(/\r$/, '');
      buffer = buffer.slice(i + 1);
      if (/^\d{3}-/.test(line)) continue;
      const next = waiting.shift();
      if (next) next(line);
      else ready.push(line);
    }
  };
  socket.on('data', onData);
  return {
    next: () =>
      new Promise<string>((resolve) => {
        const line = ready.shift();
        if (line !== undefined) resolve(line);
        else waiting.push(resolve);
      }),
    stop: () => socket.off('data', onData),
  };
}

/** Connects over TCP to `host`:`port` (named or literal), with the deadline. */
async function connect(host: string, port: number, servers: string[]): Promise<Socket> {
  const { address } = await addressOf(host, servers);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: address, port, timeout: TIMEOUT_MS });
    socket.once('connect', () => resolve(socket));
    socket.once('timeout', () =>
      socket.destroy(new Error(`no connection to ${host}:${port} within 5 s (blocked or filtered)`)),
    );
    socket.once('error', reject);
  });
}

/** Waits for a reply within the deadline, and checks it begins with `code`. */
async function expectReply(reader: ReturnType<typeof replies>, code: string, what: string): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const line = await Promise.race([
    reader.next(),
    new Promise<never>((_r, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer to ${what} within 5 s`)), TIMEOUT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
  if (!line.startsWith(code)) throw new Error(`${what} was answered "${line}"`);
  return line;
}

/** An SMTP server's greeting at `host`:`port` (outbound port 25 open when it comes). */
export async function smtpGreeting(host: string, port: number, servers: string[]): Promise<string> {
  const socket = await connect(host, port, servers);
  try {
    const reader = replies(socket);
    const greeting = await expectReply(reader, '220', 'the connection');
    socket.write('QUIT\r\n');
    return greeting;
  } finally {
    socket.destroy();
  }
}

/** STARTTLS with the SMTP server at `host`:`port`, its certificate checked for `host`. */
export async function smtpStartTls(host: string, port: number, servers: string[]): Promise<CertificateSeen> {
  const socket = await connect(host, port, servers);
  try {
    const reader = replies(socket);
    await expectReply(reader, '220', 'the connection');
    socket.write('EHLO readiness.check\r\n');
    await expectReply(reader, '250', 'EHLO');
    socket.write('STARTTLS\r\n');
    await expectReply(reader, '220', 'STARTTLS');
    reader.stop();
    const secured: TLSSocket = await new Promise((resolve, reject) => {
      const upgraded = tls.connect({ socket, servername: host });
      upgraded.once('secureConnect', () => resolve(upgraded));
      upgraded.once('error', reject);
    });
    const cert = seen(secured.getPeerCertificate());
    secured.end('QUIT\r\n');
    return cert;
  } finally {
    socket.destroy();
  }
}
