import nodemailer from 'nodemailer';
import { type BenchInternet, benchMessage, FROM_DOMAIN, PROVIDERS } from './direct-internet.ts';
import type { PostfixTuning } from './postfix-instance.ts';

/** bench:direct's side of Postfix: the messages as Postfix is fed them, and a postmaster's tuning. */

export interface ComposedMail {
  envelope: { from: string; to: string[] };
  raw: Buffer;
  messageId: string;
}

/** The bench's messages as MIME, composed before Postfix's clock starts: composing is the feeder's work. */
export async function composeForPostfix(internet: BenchInternet, count: number): Promise<ComposedMail[]> {
  const composer = nodemailer.createTransport({ streamTransport: true, buffer: true });
  const mails: ComposedMail[] = [];
  for (let i = 0; i < count; i++) {
    const m = benchMessage(internet, 'postfix', i);
    const built = await composer.sendMail(m);
    mails.push({
      envelope: { from: `news@${FROM_DOMAIN}`, to: [m.to] },
      raw: built.message as Buffer,
      messageId: built.messageId,
    });
  }
  return mails;
}

/** Feeds Postfix the messages over SMTP (32 connections, 2 in flight each). */
export async function feedPostfix(port: number, mails: ComposedMail[]) {
  const pool = nodemailer.createTransport({
    pool: true,
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    maxConnections: 32,
    maxMessages: Number.POSITIVE_INFINITY,
  });
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < mails.length) {
        const m = mails[next++];
        await pool.sendMail({ envelope: m.envelope, raw: m.raw });
      }
    }),
  );
  pool.close();
}

/**
 * What a postmaster who read the providers' limits writes (bench/direct.ts's header says why):
 * each provider's domains sent through a transport of its own to one nexthop (the provider's
 * first domain, whose MX lookup gives the provider's hosts), so the queue manager counts one
 * destination per provider; a provider's connection cap as that transport's concurrency limit,
 * from the start; connections cached and reused, TLS ones too (through tlsproxy). Tarpitted
 * domains are in no map: they go through the stock `smtp` transport, one destination each.
 */
export function postmasterTuning(internet: BenchInternet): PostfixTuning {
  const transports = PROVIDERS.map((p) => ({
    name: p.name,
    nexthop: internet.domains.find((d) => internet.providerOf.get(d) === p.name) as string,
    cap: 'maxConnections' in p.behaviour ? p.behaviour.maxConnections : undefined,
  }));
  const nexthopOf = new Map(transports.map((t) => [t.name, t.nexthop]));
  const map = [...internet.providerOf]
    .filter(([, provider]) => nexthopOf.has(provider))
    .map(([domain, provider]) => `${domain} ${provider}:${nexthopOf.get(provider)}`);
  const limits = transports.flatMap((t) =>
    t.cap === undefined
      ? []
      : [
          `${t.name}_destination_concurrency_limit = ${t.cap}`,
          `${t.name}_initial_destination_concurrency = ${t.cap}`,
        ],
  );
  return {
    main: [
      'transport_maps = texthash:$config_directory/transport',
      'smtp_connection_cache_on_demand = yes',
      `smtp_connection_cache_destinations = ${transports.map((t) => t.nexthop).join(', ')}`,
      'smtp_tls_connection_reuse = yes',
      ...limits,
    ].join('\n'),
    master: [
      ...transports.map((t) => `${t.name.padEnd(9)} unix  -       -       n       -       -       smtp`),
      'tlsproxy  unix  -       -       n       -       0       tlsproxy',
      '',
    ].join('\n'),
    files: { transport: `${map.join('\n')}\n` },
  };
}
