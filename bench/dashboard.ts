// The dashboard's heaviest reads on this machine (issue 18's targets), with Posthorn (`npm start`,
// one process), embedded PostgreSQL and this load generator on the same 2 cores:
//   a project holding 1,000,000 contacts and 1,000,000 emails (BENCH_CONTACTS, BENCH_EMAILS), made
//   set-based in SQL (printed, not measured), then analysed; a person signed in to the dashboard
//   with a password (the session cookie, as the browser sends it) asks, BENCH_REQUESTS times each,
//   two at a time, for what the screens ask:
//     emails log: page 1; a page among the first 40; the bounced ones; one recipient's messages
//     contacts: page 1; a search by the start of an address; the members of a segment
//     segments: a saved segment's count; the builder's live count of a changed definition
//   and prints p50 / p95 / max per call (target: p95 < 300 ms);
//   then the size of the JavaScript the app's first page loads, gzipped (target: < 300 KB).
// Everything talks to 127.0.0.1 only; every loop is bounded.
// Run: node bench/dashboard.ts   (BENCH_CONTACTS, BENCH_EMAILS, BENCH_REQUESTS to change it)
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { hashPassword } from '../src/domain/accounts/passwords.ts';
import { machine, readyBenchAccount, startBenchServer } from './server.ts';

const contacts = Number(process.env.BENCH_CONTACTS ?? 1_000_000);
const emails = Number(process.env.BENCH_EMAILS ?? 1_000_000);
const requests = Number(process.env.BENCH_REQUESTS ?? 60);
const CONCURRENCY = 2;
const TARGET_MS = 300;
const TARGET_JS_KB = 300;
const PASSWORD = 'bench-dashboard-password';
const root = path.resolve(import.meta.dirname, '..');
const n = (x: number) => x.toLocaleString('en');

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** The JavaScript the app's first page loads: index.html's module script and its modulepreloads. */
function initialJavaScript(): { files: string[]; gzipBytes: number } {
  const dist = path.join(root, 'dist', 'web');
  const html = readFileSync(path.join(dist, 'index.html'), 'utf8');
  const files = [
    ...html.matchAll(/<script[^>]+src="([^"]+\.js)"|<link[^>]+rel="modulepreload"[^>]+href="([^"]+\.js)"/g),
  ].map((m) => (m[1] ?? m[2]).replace(/^\//, ''));
  const gzipBytes = files.reduce(
    (sum, f) => sum + gzipSync(readFileSync(path.join(dist, f)), { level: 9 }).length,
    0,
  );
  return { files, gzipBytes };
}

const server = await startBenchServer({ POSTHORN_WORKER_CONCURRENCY: '4' }, ['start']);
let failed = false;
try {
  console.log(`Dashboard benchmark, ${machine()}; npm start as one process, embedded PostgreSQL`);
  const { projectId, db } = await readyBenchAccount(server);
  const setupStart = performance.now();
  const plans = `array['free', 'pro', 'team', 'enterprise']`;
  const cities = `array['Paris', 'Berlin', 'Lisbon', 'Oslo', 'Rome', 'Leeds']`;
  await db.query(
    `insert into contacts (project_id, email, first_name, last_name, properties, subscribed, created_at, updated_at)
     select $1, 'user' || g || '@example' || (g % 97) || '.com', 'First' || (g % 500), 'Last' || (g % 800),
            jsonb_build_object('plan', (${plans})[1 + g % 4], 'city', (${cities})[1 + g % 6], 'seats', g % 50),
            g % 10 <> 0, now() - (g * interval '30 seconds'), now()
       from generate_series(1, $2::int) g`,
    [projectId, contacts],
  );
  // statuses as a sending project has them: most delivered, a few bounced, complained, deferred
  await db.query(
    `insert into emails (id, project_id, stream, status, message_id, from_header, from_address, to_addresses,
                         recipients, subject, html, text_body, size_bytes, sent_at, created_at, updated_at)
     select gen_random_uuid(), $1, 'transactional',
            case when g % 100 < 3 then 'bounced' when g % 1000 = 999 then 'complained'
                 when g % 100 = 4 then 'deferred' else 'delivered' end,
            '<' || g || '@bench.example>', 'Bench <hello@bench.example>', 'hello@bench.example',
            array['user' || (1 + g % $3::int) || '@example' || ((1 + g % $3::int) % 97) || '.com'],
            array['user' || (1 + g % $3::int) || '@example' || ((1 + g % $3::int) % 97) || '.com'],
            'Your receipt #' || g, '<p>Thanks for your order #' || g || '.</p>' || repeat('<p>Line of the receipt.</p>', 20),
            'Thanks for your order #' || g || '.', 1200, now() - (g * interval '2 seconds'),
            now() - (g * interval '2 seconds'), now() - (g * interval '2 seconds')
       from generate_series(1, $2::int) g`,
    [projectId, emails, contacts],
  );
  await db.query('vacuum analyze contacts');
  await db.query('vacuum analyze emails');
  console.log(
    `setup (not measured): ${n(contacts)} contacts and ${n(emails)} emails in SQL, vacuumed and analysed, in ${((performance.now() - setupStart) / 1000).toFixed(1)} s`,
  );

  // signed in as a person, through the dashboard's own sign-in
  await db.query('update accounts set password_hash = $1', [await hashPassword(PASSWORD)]);
  const email = (await db.query('select email from accounts limit 1')).rows[0].email as string;
  const login = await fetch(`${server.url}/api/auth/login/password`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: PASSWORD }),
  });
  const cookie = /posthorn_session=[^;]+/.exec(login.headers.get('set-cookie') ?? '')?.[0];
  const csrf = ((await login.json()) as { csrf_token?: string; session?: { csrf_token: string } }) ?? {};
  if (login.status !== 200 || !cookie) throw new Error(`sign-in failed: ${login.status}`);
  const csrfToken = csrf.session?.csrf_token ?? csrf.csrf_token ?? '';
  const headers = { cookie, 'x-project-id': projectId, 'x-csrf-token': csrfToken };
  const call = async (method: string, url: string, body?: unknown) => {
    const res = await fetch(`${server.url}${url}`, {
      method,
      headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${method} ${url}: ${res.status} ${text}`);
    return JSON.parse(text);
  };

  const proPlan = {
    all: [
      { field: 'properties.plan', op: 'equals', value: 'pro' },
      { field: 'subscribed', op: 'equals', value: true },
    ],
  };
  const segment = await call('POST', '/v1/segments', { name: 'Pro plan, subscribed', definition: proPlan });

  const pick = (i: number, k: number) => 1 + ((i * 7919) % k);
  const scenarios: [string, (i: number) => Promise<unknown>][] = [
    ['emails log, page 1', () => call('GET', '/v1/emails?limit=25&offset=0')],
    [
      'emails log, a page among the first 40',
      (i) => call('GET', `/v1/emails?limit=25&offset=${25 * pick(i, 40)}`),
    ],
    ['emails log, status bounced', () => call('GET', '/v1/emails?limit=25&offset=0&status=bounced')],
    [
      'emails log, one recipient',
      (i) => {
        const c = pick(i, contacts);
        return call(
          'GET',
          `/v1/emails?limit=25&offset=0&to=${encodeURIComponent(`user${c}@example${c % 97}.com`)}`,
        );
      },
    ],
    ['contacts, page 1', () => call('GET', '/v1/contacts?limit=25&offset=0')],
    [
      'contacts, search by the start of an address',
      (i) => call('GET', `/v1/contacts?limit=25&offset=0&search=user${pick(i, 999)}`),
    ],
    [
      'contacts, members of the segment',
      () => call('GET', `/v1/contacts?limit=25&offset=0&segment=${segment.id}`),
    ],
    ['segment count (saved)', () => call('GET', `/v1/segments/${segment.id}/count`)],
    [
      'segment count (builder preview)',
      (i) =>
        call('POST', '/v1/segments/preview', {
          definition: { all: [...proPlan.all, { field: 'properties.seats', op: 'gte', value: i % 50 }] },
        }),
    ],
  ];

  let met = true;
  console.log(
    `each call ${requests} times, ${CONCURRENCY} at a time, as the signed-in person (session cookie):`,
  );
  for (const [name, run] of scenarios) {
    await run(0); // warm: the first call of a kind plans and reads what later calls find cached
    const times: number[] = [];
    let next = 0;
    const sample = await run(1);
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < requests) {
          const i = next++;
          const t = performance.now();
          await run(i);
          times.push(performance.now() - t);
        }
      }),
    );
    times.sort((a, b) => a - b);
    const p95 = percentile(times, 95);
    if (p95 >= TARGET_MS) met = false;
    const answered = (sample as { total?: number; count?: number; data?: unknown[] }) ?? {};
    const what =
      answered.count !== undefined ? `count ${n(answered.count)}` : `total ${n(answered.total ?? 0)}`;
    console.log(
      `  ${name} (${what}): p50 ${percentile(times, 50).toFixed(0)} ms, p95 ${p95.toFixed(0)} ms, max ${times.at(-1)?.toFixed(0)} ms`,
    );
  }
  const js = initialJavaScript();
  console.log(
    `initial JavaScript of the app: ${js.files.length} files, ${(js.gzipBytes / 1024).toFixed(1)} KB gzipped (${js.files.join(', ')})`,
  );
  console.log(
    `targets: p95 < ${TARGET_MS} ms for every call ${met ? 'met' : 'NOT met'}; initial JS < ${TARGET_JS_KB} KB gzipped ${js.gzipBytes < TARGET_JS_KB * 1024 ? 'met' : 'NOT met'}`,
  );
  await db.end();
} catch (e) {
  failed = true;
  console.error(e);
} finally {
  await server.stop();
}
process.exit(failed ? 1 : 0);
