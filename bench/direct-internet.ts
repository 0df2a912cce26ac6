import { type SimInternet, type SimServer, startSimInternet } from '../test/helpers/sim-internet.ts';

/**
 * bench:direct's simulated internet: 1,000 recipient domains over the simulated providers, a DNS
 * server on 127.0.0.153:53 and every mail server on 127.0.0.x at port 25. Each configuration gets a
 * fresh one, so none inherits another's greylisting memory, rolling minute or held sessions.
 */

export const DOMAINS = 1000;
export const DNS = { address: '127.0.0.153', port: 53 };
/** Where the tarpit answers, and which of the 1,000 domain slots it takes (every 20th: 5 %). */
const TARPIT_IP = '127.0.0.70';
const tarpitSlot = (slot: number) => slot % 20 === 19;

/** The simulated providers: MX hosts, addresses, behaviour, and their share of the 1,000 domains. */
export const PROVIDERS = [
  {
    name: 'bigmail',
    hosts: [
      ['gmail-smtp-in.l.google.com', '127.0.0.60'],
      ['alt1.gmail-smtp-in.l.google.com', '127.0.0.61'],
    ],
    behaviour: { maxConnections: 20 },
    domains: 400,
    throttling: true,
  },
  {
    name: 'outlook',
    hosts: [['bench.mail.protection.outlook.com', '127.0.0.62']],
    behaviour: { maxConnections: 10, perMinute: 24_000 },
    domains: 200,
    throttling: true,
  },
  {
    name: 'yahoo',
    hosts: [['mta5.am0.yahoodns.net', '127.0.0.63']],
    behaviour: { maxConnections: 5, perMinute: 18_000 },
    domains: 150,
    throttling: true,
  },
  {
    name: 'greylist',
    hosts: [['mx.greylist.example', '127.0.0.64']],
    behaviour: { greylist: true },
    domains: 50,
    throttling: false,
  },
  ...[1, 2, 3, 4, 5].map((k) => ({
    name: `hoster${k}`,
    hosts: [[`mx1.hoster${k}.example`, `127.0.0.${64 + k}`]],
    behaviour: k <= 2 ? { tls: false } : {},
    domains: 40,
    throttling: false,
  })),
] as const;

export interface BenchInternet {
  net: SimInternet;
  /** The domain of each slot: message i goes to `reader<i>@` the domain of slot i % 1,000. */
  domains: string[];
  /** Each domain's provider ('tarpit' for a tarpitted one). */
  providerOf: Map<string, string>;
  /** The tarpit's server, when there is one. */
  tarpit?: SimServer;
}

/**
 * Starts the providers' servers and publishes their domains. With `tarpits`, every 20th slot's
 * domain is instead `tarpit-<k>.example`, whose own MX name (mx.tarpit-<k>.example) points at one
 * server on 127.0.0.70 that takes the data and never answers the final dot: each provider keeps
 * 95 % of its domains and its servers see nothing else.
 */
export async function buildInternet(tarpits: boolean): Promise<BenchInternet> {
  const net = await startSimInternet({ lean: true, port: 25, dns: DNS });
  const internet: BenchInternet = { net, domains: [], providerOf: new Map() };
  for (const provider of PROVIDERS) {
    for (const [host, ip] of provider.hosts) await net.server(host, ip, { ...provider.behaviour });
    const mx = provider.hosts.map(([host], i) => [10 + i * 10, host] as [number, string]);
    for (let d = 0; d < provider.domains; d++) {
      const slot = internet.domains.length;
      if (tarpits && tarpitSlot(slot)) {
        const k = Math.floor(slot / 20);
        const host = `mx.tarpit-${k}.example`;
        if (!internet.tarpit) internet.tarpit = await net.server(host, TARPIT_IP, { tarpit: true });
        else net.address(host, TARPIT_IP);
        net.mx(`tarpit-${k}.example`, [[10, host]]);
        internet.domains.push(`tarpit-${k}.example`);
        internet.providerOf.set(`tarpit-${k}.example`, 'tarpit');
        continue;
      }
      const domain = `${provider.name}-${d}.example`;
      net.mx(domain, mx);
      internet.domains.push(domain);
      internet.providerOf.set(domain, provider.name);
    }
  }
  if (internet.domains.length !== DOMAINS)
    throw new Error(`${internet.domains.length} domains, not ${DOMAINS}`);
  return internet;
}

/** Whether message `i` goes to a tarpitted domain. */
export function tarpitted(internet: BenchInternet, i: number): boolean {
  return internet.providerOf.get(internet.domains[i % DOMAINS]) === 'tarpit';
}

export interface Counts {
  received: number;
  duplicates: number;
  missing: number;
  /** At the throttling servers: connections refused for the cap, messages deferred for the rate. */
  connectionRefusals: number;
  rateDeferrals: number;
  /** Every deferral the throttling servers gave (connection refusals and rate deferrals). */
  throttlingDeferrals: number;
  greylisted: number;
  /** The most connections at once at bigmail's two hosts, outlook and yahoo. */
  mostAtOnce: number[];
  /** The most messages in a rolling minute at outlook and yahoo (their caps: 24,000 and 18,000). */
  mostPerMinute: number[];
  /** Messages that came over TLS. */
  encrypted: number;
  /** Messages the tarpit holds unanswered. */
  tarpitHeld: number;
}

export function countsOf(internet: BenchInternet, expected: Set<string>): Counts {
  const { net } = internet;
  const throttling = new Set(PROVIDERS.filter((p) => p.throttling).flatMap((p) => p.hosts.map(([h]) => h)));
  const sum = (pick: (s: SimServer) => number, only?: Set<string>) =>
    net.servers.filter((s) => !only || only.has(s.host)).reduce((n, s) => n + pick(s), 0);
  const ids = new Set(net.servers.flatMap((s) => s.messages.map((m) => m.messageId)));
  const received = sum((s) => s.messages.length);
  const byHost = (host: string) => net.servers.find((s) => s.host === host) as SimServer;
  const capped = PROVIDERS.filter((p) => p.throttling).flatMap((p) => p.hosts.map(([h]) => byHost(h)));
  const rated = capped.filter((s) => s.behaviour.perMinute !== undefined);
  const connectionRefusals = sum((s) => s.refusedConnections, throttling);
  const rateDeferrals = sum((s) => s.rateDeferrals, throttling);
  return {
    received,
    duplicates: received - ids.size,
    missing: [...expected].filter((id) => !ids.has(id)).length,
    connectionRefusals,
    rateDeferrals,
    throttlingDeferrals: connectionRefusals + rateDeferrals,
    greylisted: sum((s) => s.greylisted),
    mostAtOnce: capped.map((s) => s.maxConcurrent),
    mostPerMinute: rated.map((s) => s.maxPerMinute),
    encrypted: sum((s) => s.messages.filter((m) => m.tls).length),
    tarpitHeld: internet.tarpit?.held ?? 0,
  };
}

/** Waits until the servers hold every expected Message-ID (true), or `timeoutMs` passes (false). */
export async function allArrived(internet: BenchInternet, expected: Set<string>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  const seen = new Set<string>();
  const read = new Map<SimServer, number>();
  while (Date.now() < deadline) {
    for (const s of internet.net.servers) {
      for (let i = read.get(s) ?? 0; i < s.messages.length; i++) seen.add(s.messages[i].messageId);
      read.set(s, s.messages.length);
    }
    if ([...expected].every((id) => seen.has(id))) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

/**
 * Ends the tarpit's sessions: its held messages are answered 421 and it stops listening; a session
 * still open after 30 s is cut by the server, so this never waits longer than that.
 */
export async function stopTarpit(internet: BenchInternet) {
  if (!internet.tarpit) return;
  await Promise.race([internet.tarpit.close(), new Promise((r) => setTimeout(r, 35_000))]);
}

export const FROM_DOMAIN = 'bench.example';
const HTML = `<h1>Hello reader</h1><p>${'Some words of a typical newsletter paragraph. '.repeat(20)}</p>`;

/** The bench's message `i` (~1.5 KB of HTML), to a reader at slot i % 1,000's domain. */
export const benchMessage = (internet: BenchInternet, tag: string, i: number) => ({
  from: `Bench <news@${FROM_DOMAIN}>`,
  to: `reader${i}@${internet.domains[i % DOMAINS]}`,
  subject: `Your weekly digest ${tag} ${i}`,
  html: HTML,
});

/** When each server's messages arrived, in seconds from `startMs` (epoch ms): p10, p50, p90, last. */
export function arrivals(internet: BenchInternet, startMs: number): string {
  return internet.net.servers
    .filter((s) => s.messages.length > 0)
    .map((s) => {
      const at = s.messages.map((m) => (m.at - startMs) / 1000).sort((a, b) => a - b);
      const q = (p: number) => at[Math.floor((at.length - 1) * p)].toFixed(1);
      return `  ${s.host}: ${at.length}, p10 ${q(0.1)} p50 ${q(0.5)} p90 ${q(0.9)} last ${q(1)} s`;
    })
    .join('\n');
}
