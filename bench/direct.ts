// Posthorn's direct route beside Postfix on one simulated internet (issue 32), in one run: the same
// messages to the same recipients at 1,000 domains spread over simulated providers, each a mail
// server on its own 127.0.0.x address at port 25 that behaves like a kind of provider:
//   bigmail   (MX gmail-smtp-in.l.google.com and alt1.…): 20 connections at once per client, 421 beyond
//   outlook   (MX bench.mail.protection.outlook.com): 10 at once, and 24,000 messages a minute, 4.7.28 beyond
//   yahoo     (MX mta5.am0.yahoodns.net): 5 at once, and 18,000 a minute, 4.7.28 beyond
//   greylist  (MX mx.greylist.example): 451 to the first try of each sender, recipient and address
//   hosters   (MX mx1.hoster<k>.example, k = 1…5): a default server each, two without STARTTLS
// A DNS server on 127.0.0.153:53 answers for all of it. Postfix (Debian's, a private instance,
// stock concurrency, signs nothing, its resolver pointed at that DNS server from a mount
// namespace with its own resolv.conf, first retry after 5 s) is fed the messages over SMTP;
// Posthorn (api and worker processes on an embedded PostgreSQL, every message committed before
// the answer and DKIM-signed) through POST /v1/emails/batch, its direct route told the
// providers' published limits (`sites`), retries after 5 s. Each is timed from the first message
// in until every message is at its recipient's server; then the servers' counts: connections
// refused for the connection cap and messages deferred for the rate cap (cap violations: a
// sender that keeps to the limits has none), greylisting deferrals, and messages missing.
// Needs root (port 25 and 53, Postfix's own instance); BENCH_MESSAGES (default 100,000) scales it.
// Run: node bench/direct.ts
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { freePort } from '../src/db/embedded.ts';
import { type SimInternet, type SimServer, startSimInternet } from '../test/helpers/sim-internet.ts';
import { ensurePostfix, type PostfixInstance, startPostfix } from './postfix-instance.ts';
import {
  type BenchServer,
  guardBench,
  json,
  machine,
  quietMachine,
  readyBenchAccount,
  startBenchServer,
} from './server.ts';

const messages = Number(process.env.BENCH_MESSAGES ?? 100_000);
const DOMAINS = 1000;
const FROM_DOMAIN = 'bench.example';
const DNS = { address: '127.0.0.153', port: 53 };
const RETRY_SECONDS = 5;

if (process.getuid?.() !== 0) {
  console.error(
    'bench:direct needs root: its mail servers listen on port 25, its DNS server on 53, and it runs Postfix',
  );
  process.exit(1);
}

/** The simulated providers: MX hosts, addresses, behaviour, and their share of the 1,000 domains. */
const PROVIDERS = [
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

/** What an operator who read the providers' limits writes in the direct route's `sites`. */
const SITES = {
  'gmail-smtp-in.l.google.com': { max_connections: 10, messages_per_connection: 100 },
  'bench.mail.protection.outlook.com': {
    max_connections: 5,
    messages_per_connection: 100,
    messages_per_hour: 1_350_000,
  },
  'mta5.am0.yahoodns.net': { max_connections: 5, messages_per_connection: 100, messages_per_hour: 1_000_000 },
};

const domainNames: string[] = [];
const providerOfDomain = new Map<string, string>();

async function buildInternet(): Promise<SimInternet> {
  const net = await startSimInternet({ lean: true, port: 25, dns: DNS });
  for (const provider of PROVIDERS) {
    for (const [host, ip] of provider.hosts) await net.server(host, ip, { ...provider.behaviour });
    for (let d = 0; d < provider.domains; d++) {
      const domain = `${provider.name}-${d}.example`;
      net.mx(
        domain,
        provider.hosts.map(([host], i) => [10 + i * 10, host] as [number, string]),
      );
      domainNames.push(domain);
      providerOfDomain.set(domain, provider.name);
    }
  }
  if (domainNames.length !== DOMAINS) throw new Error(`${domainNames.length} domains, not ${DOMAINS}`);
  return net;
}

const HTML = `<h1>Hello reader</h1><p>${'Some words of a typical newsletter paragraph. '.repeat(20)}</p>`;
const message = (tag: string, i: number) => ({
  from: `Bench <news@${FROM_DOMAIN}>`,
  to: `reader${i}@${domainNames[i % DOMAINS]}`,
  subject: `Your weekly digest ${tag} ${i}`,
  html: HTML,
});

interface Counts {
  received: number;
  unique: number;
  capViolations: number;
  rateDeferrals: number;
  connectionRefusals: number;
  greylisted: number;
  maxConcurrent: Record<string, number>;
}

function resetCounts(net: SimInternet) {
  for (const s of net.servers) {
    s.messages.length = 0;
    s.maxConcurrent = 0;
    s.accepted = 0;
    s.refusedConnections = 0;
    s.rateDeferrals = 0;
    s.greylisted = 0;
    s.maxPerMinute = 0;
    s.tlsSessions = 0;
  }
}

function countsOf(net: SimInternet, expected: Set<string>): Counts & { missing: number } {
  const throttling = new Set(PROVIDERS.filter((p) => p.throttling).flatMap((p) => p.hosts.map(([h]) => h)));
  const at = (pick: (s: SimServer) => number, only?: Set<string>) =>
    net.servers.filter((s) => !only || only.has(s.host)).reduce((n, s) => n + pick(s), 0);
  const ids = new Set(net.servers.flatMap((s) => s.messages.map((m) => m.messageId)));
  return {
    received: at((s) => s.messages.length),
    unique: ids.size,
    missing: [...expected].filter((id) => !ids.has(id)).length,
    connectionRefusals: at((s) => s.refusedConnections, throttling),
    rateDeferrals: at((s) => s.rateDeferrals, throttling),
    capViolations: at((s) => s.refusedConnections + s.rateDeferrals, throttling),
    greylisted: at((s) => s.greylisted),
    maxConcurrent: Object.fromEntries(net.servers.map((s) => [s.host, s.maxConcurrent])),
  };
}

/** Waits until the servers hold every expected Message-ID (true), or `timeoutMs` passes (false). */
async function allArrived(net: SimInternet, expected: Set<string>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  const seen = new Set<string>();
  const read = new Map<SimServer, number>();
  while (Date.now() < deadline) {
    for (const s of net.servers) {
      for (let i = read.get(s) ?? 0; i < s.messages.length; i++) seen.add(s.messages[i].messageId);
      read.set(s, s.messages.length);
    }
    if ([...expected].every((id) => seen.has(id))) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

/** Feeds Postfix the messages over SMTP (32 connections, 2 in flight each); their Message-IDs. */
async function feedPostfix(port: number): Promise<Set<string>> {
  const composer = nodemailer.createTransport({ streamTransport: true, buffer: true });
  const mails: { envelope: { from: string; to: string[] }; raw: Buffer; id: string }[] = [];
  for (let i = 0; i < messages; i++) {
    const m = message('postfix', i);
    const built = await composer.sendMail(m);
    mails.push({
      envelope: { from: `news@${FROM_DOMAIN}`, to: [m.to] },
      raw: built.message as Buffer,
      id: built.messageId,
    });
  }
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
  return new Set(mails.map((m) => m.id));
}

/** Feeds Posthorn the messages in batches of 100 through the API; their Message-IDs. */
async function feedPosthorn(
  server: BenchServer,
  key: string,
  db: { query: (q: string, v?: unknown[]) => Promise<{ rows: { message_id: string }[] }> },
) {
  const ids: string[] = [];
  for (let sent = 0; sent < messages; sent += 100) {
    const res = await json(
      `${server.url}/v1/emails/batch`,
      'POST',
      key,
      Array.from({ length: Math.min(100, messages - sent) }, (_, i) => message('posthorn', sent + i)),
    );
    if (res.status !== 200) throw new Error(`batch refused: ${JSON.stringify(res.body)}`);
    ids.push(...(res.body as { data: { id: string }[] }).data.map((d) => d.id));
  }
  const rows = await db.query('select message_id from emails where id = any($1)', [ids]);
  return new Set(rows.rows.map((r) => r.message_id));
}

const dir = path.join(tmpdir(), `posthorn-bench-direct-${process.pid}`);
let net: SimInternet | undefined;
let postfix: PostfixInstance | undefined;
let server: BenchServer | undefined;
const guard = guardBench('bench:direct', Number(process.env.BENCH_MAX_SECONDS ?? 3600), async () => {
  postfix?.stop();
  await server?.stop();
  await net?.close();
});

const rate = (n: number, seconds: number) => Math.round(n / seconds);
let failed = false;
try {
  const installed = ensurePostfix();
  net = await buildInternet();
  const { mkdirSync } = await import('node:fs');
  mkdirSync(dir, { recursive: true });
  const resolvConf = path.join(dir, 'resolv.conf');
  writeFileSync(resolvConf, `nameserver ${DNS.address}\noptions timeout:2 attempts:2\n`);

  // Postfix
  const postfixPort = await freePort();
  postfix = startPostfix(postfixPort, {
    resolvConf,
    bindAddress: '127.0.0.11',
    heloName: 'mta2.bench.example',
    retrySeconds: RETRY_SECONDS,
  });
  await quietMachine();
  resetCounts(net);
  const pfStart = performance.now();
  const pfIds = await feedPostfix(postfixPort);
  const pfFed = (performance.now() - pfStart) / 1000;
  const pfDone = await allArrived(net, pfIds, 1_800_000);
  const pfSeconds = (performance.now() - pfStart) / 1000;
  const pf = countsOf(net, pfIds);
  postfix.stop();
  postfix = undefined;

  // Posthorn
  const routes = path.join(dir, 'routes.json');
  writeFileSync(
    routes,
    JSON.stringify({
      routes: {
        direct: {
          type: 'direct',
          source_addresses: [{ address: '127.0.0.10', ehlo: 'mta1.bench.example' }],
          sites: SITES,
        },
      },
      rules: [{ match: {}, routes: ['direct'] }],
    }),
  );
  server = await startBenchServer(
    {
      POSTHORN_ROUTES: routes,
      POSTHORN_DNS_SERVERS: `${DNS.address}:${DNS.port}`,
      POSTHORN_RETRY_SCHEDULE: `${RETRY_SECONDS},${RETRY_SECONDS * 2},${RETRY_SECONDS * 4},${RETRY_SECONDS * 8}`,
      POSTHORN_WORKER_CONCURRENCY: '8',
    },
    ['api', 'worker'],
  );
  const { key, db } = await readyBenchAccount(server, { domain: FROM_DOMAIN });
  await quietMachine();
  resetCounts(net);
  const phStart = performance.now();
  const phIds = await feedPosthorn(server, key, db);
  const phFed = (performance.now() - phStart) / 1000;
  const phDone = await allArrived(net, phIds, 1_800_000);
  const phSeconds = (performance.now() - phStart) / 1000;
  const ph = countsOf(net, phIds);
  await db.end();

  const pfRate = rate(messages, pfSeconds);
  const phRate = rate(messages, phSeconds);
  console.log(`Posthorn's direct route beside Postfix on one simulated internet, ${machine()}`);
  console.log(
    `postfix ${installed}; ${messages.toLocaleString()} messages of ~1.5 KB to ${DOMAINS} domains over ${PROVIDERS.length} simulated providers`,
  );
  const line = (
    name: string,
    r: number,
    seconds: number,
    fed: number,
    done: boolean,
    c: ReturnType<typeof countsOf>,
  ) =>
    console.log(
      `${name}: ${r} msg/s (${seconds.toFixed(1)} s, fed in ${fed.toFixed(1)} s)${done ? '' : ' INCOMPLETE'}; at the throttling servers ${c.capViolations} cap violations (${c.connectionRefusals} connections over the cap, ${c.rateDeferrals} messages over the rate); greylisted ${c.greylisted}; received ${c.received} (${c.received - c.unique} duplicates), missing ${c.missing}; most connections at once ${JSON.stringify(c.maxConcurrent)}`,
    );
  line('Postfix ', pfRate, pfSeconds, pfFed, pfDone, pf);
  line('Posthorn', phRate, phSeconds, phFed, phDone, ph);
  const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
  console.log(
    `targets: >= 2 x Postfix ${met(phRate >= 2 * pfRate)} (${(phRate / pfRate).toFixed(2)}); 0 cap violations ${met(ph.capViolations === 0)}; deferrals at the throttling servers at most half Postfix's ${met(ph.capViolations <= pf.capViolations / 2)} (${ph.capViolations} vs ${pf.capViolations}); 0 lost ${met(ph.missing === 0)}`,
  );
  failed = !pfDone || !phDone || ph.missing > 0;
} catch (err) {
  failed = true;
  console.error(err);
} finally {
  await guard.done();
}
process.exit(failed ? 1 : 0);
