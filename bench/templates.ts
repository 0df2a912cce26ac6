// Templates on this machine:
//   (1) personalised renders per second of a typical newsletter template on one core: the starter's
//       MJML compiled once (as a published version is), then Liquid per recipient (a different
//       contact and variables each time), through the one render function sends use
//   (2) POST /v1/emails with `template: {id, variables}` accepted per second (the same bar as plain
//       sends), server and PostgreSQL on the same two cores, load from wrk
// Run: node bench/templates.ts   (BENCH_RENDERS, BENCH_SECONDS, BENCH_CONNECTIONS to change the load)
import { checkContent } from '../src/domain/templates/content.ts';
import { renderTemplate, sampleVariables } from '../src/domain/templates/render.ts';
import { STARTERS } from '../src/domain/templates/starters.ts';
import { load } from './load.ts';
import { json, machine, readyBenchAccount, startBenchServer } from './server.ts';
import { startBenchSink } from './sink.ts';

const renders = Number(process.env.BENCH_RENDERS ?? 50_000);
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const DOMAIN = 'bench.example';

const newsletter = STARTERS.find((s) => s.key === 'newsletter');
if (!newsletter) throw new Error('the newsletter starter is missing');

// (1) renders per second, in this process (one core)
const compileStart = performance.now();
const content = await checkContent(newsletter, 'bench');
const compileMs = performance.now() - compileStart;
const source = { cacheKey: 'bench@1', ...content };
const samples = sampleVariables(content.variables);
const variables = (i: number) =>
  Object.fromEntries(
    content.variables.map((v) => [v.name, v.type === 'string' ? `${samples[v.name]} ${i}` : samples[v.name]]),
  );
const contact = (i: number) => ({
  email: `reader${i}@example.org`,
  first_name: `Reader${i}`,
  last_name: 'Bench',
  properties: { plan: i % 2 ? 'pro' : 'free' },
});
for (let i = 0; i < 500; i++) renderTemplate(source, variables(i), contact(i)); // warm-up
const renderStart = performance.now();
let bytes = 0;
for (let i = 0; i < renders; i++) bytes += renderTemplate(source, variables(i), contact(i)).html.length;
const renderSeconds = (performance.now() - renderStart) / 1000;
const renderRate = renders / renderSeconds;

// (2) sends from a published template through the API
const sink = await startBenchSink();
const server = await startBenchServer({ POSTHORN_SMTP_RELAY: sink.url, POSTHORN_WORKER_CONCURRENCY: '8' }, [
  'api',
  'worker',
]);
let failed = false;
try {
  const { key, db } = await readyBenchAccount(server, { domain: DOMAIN });
  const created = await json(`${server.url}/v1/templates`, 'POST', key, {
    name: 'Bench newsletter',
    starter: 'newsletter',
    from: `Bench <news@${DOMAIN}>`,
  });
  if (!created.body?.id) throw new Error(`template not created: ${JSON.stringify(created.body)}`);
  await json(`${server.url}/v1/templates/${created.body.id}/publish`, 'POST', key);
  const body = JSON.stringify({
    to: 'reader@example.org',
    template: { id: created.body.id, variables: variables(7) },
    tags: [{ name: 'bench', value: 'templates' }],
  });
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const post = (secs: number) =>
    load({ url: `${server.url}/v1/emails`, method: 'POST', headers, body, connections, seconds: secs });
  await post(2);
  const sends = await post(seconds);
  // the same message without a template (its rendered subject, HTML and text in the request): what
  // rendering adds, apart from the size of a real newsletter
  const rendered = renderTemplate(source, variables(7), null);
  const plainBody = JSON.stringify({
    from: `Bench <news@${DOMAIN}>`,
    to: 'reader@example.org',
    ...rendered,
    tags: [{ name: 'bench', value: 'templates' }],
  });
  const plain = await load({
    url: `${server.url}/v1/emails`,
    method: 'POST',
    headers,
    body: plainBody,
    connections,
    seconds,
  });
  await db.end();

  console.log(`Templates benchmark, ${machine()}`);
  console.log(
    `(1) newsletter starter: MJML compiled once in ${compileMs.toFixed(0)} ms; ${renders} personalised renders in ${renderSeconds.toFixed(2)} s on one core`,
  );
  console.log(
    `    renders/s ${renderRate.toFixed(0)} (${(bytes / renders / 1024).toFixed(1)} KB of HTML each, text part derived)`,
  );
  console.log(
    `(2) POST /v1/emails with a template, ${connections} connections, ${seconds} s, load from ${sends.tool}:`,
  );
  console.log(
    `    accepted/s ${sends.rps.toFixed(0)}; latency ms p50 ${sends.p50} p90 ${sends.p90} p99 ${sends.p99}; errors ${sends.errors}`,
  );
  console.log(
    `(3) the same message sent without a template (rendered subject, HTML and text in the request): accepted/s ${plain.rps.toFixed(0)}; p99 ${plain.p99} ms`,
  );
  console.log(
    `targets: renders >= 5000/s ${renderRate >= 5000 ? 'met' : 'NOT met'}, template sends >= 1500/s ${sends.rps >= 1500 ? 'met' : 'NOT met'}`,
  );
  failed = sends.errors > 0;
} finally {
  await server.stop();
  await sink.close();
}
process.exit(failed ? 1 : 0);
