import { availableParallelism, loadavg } from 'node:os';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { TEMPLATE_THREADS } from '../../src/domain/templates/fair-pool.ts';
import { expectError } from '../helpers/emails.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// Issue 28, item 1: template work that user input makes expensive runs off the event loop, within a
// budget, and queued per project, so one project's heavy saves and previews stall nobody else.

let server: TestServer;
let heavyKey: string;
let otherKey: string;

beforeAll(async () => {
  server = await startTestServer();
  const heavy = await server.signupConfirmed();
  heavyKey = heavy.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, heavy.workspace.id, 'unlimited');
  const other = await server.signupConfirmed();
  otherKey = other.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, other.workspace.id, 'unlimited');
  for (const email of ['ann@example.org', 'bob@example.org'])
    expect((await server.call('POST', '/v1/contacts', { key: otherKey, body: { email } })).status).toBe(200);
});
afterAll(() => server?.close());

let names = 0;
const createTemplate = (key: string, body: Record<string, unknown>) =>
  server.call('POST', '/v1/templates', { key, body: { name: `Template ${++names}`, ...body } });

interface Sample {
  path: string;
  status: number;
  ms: number;
}

/**
 * Calls the other project's `GET /v1/contacts` and `/healthz` one after the other until `work`
 * settles, timing each answer; returns what `work` gave and the samples.
 */
async function sampledDuring<T>(work: Promise<T>): Promise<{ result: T; samples: Sample[] }> {
  const samples: Sample[] = [];
  let done = false;
  const settled = work.finally(() => {
    done = true;
  });
  const probe = (async () => {
    while (!done)
      for (const [path, key] of [
        ['/v1/contacts', otherKey],
        ['/healthz', undefined],
      ] as const) {
        const started = performance.now();
        const res = await server.call('GET', path, key ? { key } : {});
        samples.push({ path, status: res.status, ms: performance.now() - started });
      }
  })();
  const result = await settled;
  await probe;
  return { result, samples };
}

/** The slowest answer of each path among `samples`. */
const slowest = (samples: Sample[], path: string) =>
  Math.max(...samples.filter((s) => s.path === path).map((s) => s.ms));

// How long the other project's reads take on this machine while as many threads as the template
// pool has spin on the CPU, with nothing on the event loop: a floor for the bounds below, so the
// test measures what the heavy project adds beyond the CPU its threads use. A stalled event loop
// adds seconds either way.
let quiet: { contacts: number; health: number };
beforeAll(async () => {
  // the pools' threads started (MJML loaded in its thread), as on a server that has served a while
  const warm = await createTemplate(otherKey, {
    subject: 'Warm',
    mjml: '<mjml><mj-body><mj-section><mj-column><mj-text>Warm</mj-text></mj-column></mj-section></mj-body></mjml>',
  });
  expect(warm.status, JSON.stringify(warm.body)).toBe(200);
  const spinners = Array.from(
    { length: TEMPLATE_THREADS },
    () => new Worker('const until = Date.now() + 2000; while (Date.now() < until) {}', { eval: true }),
  );
  const { samples } = await sampledDuring(
    Promise.all(spinners.map((w) => new Promise((resolve) => w.once('exit', resolve)))),
  );
  quiet = { contacts: slowest(samples, '/v1/contacts'), health: slowest(samples, '/healthz') };
});

/**
 * How oversubscribed the CPU is: runnable work per core over the last minute, at least 1. On a
 * machine running more than it has cores for, every request waits for the scheduler in proportion.
 */
const oversubscription = () => Math.max(1, loadavg()[0] / availableParallelism());

/**
 * The other project's reads were all answered (never a 503), contacts within 200 ms and /healthz
 * within 100 ms, stretched as far as the CPU is oversubscribed (the whole suite beside two CPU-bound
 * loops), and never below three times their slowest answer beside as many spinning threads.
 */
function expectPrompt(samples: Sample[]) {
  const contacts = samples.filter((s) => s.path === '/v1/contacts');
  const health = samples.filter((s) => s.path === '/healthz');
  expect(contacts.length).toBeGreaterThan(0);
  expect(health.length).toBeGreaterThan(0);
  expect(contacts.filter((s) => s.status !== 200)).toEqual([]);
  expect(health.filter((s) => s.status !== 200)).toEqual([]);
  const stretch = oversubscription();
  const bounds = {
    contacts: Math.max(200 * stretch, 3 * quiet.contacts),
    health: Math.max(100 * stretch, 3 * quiet.health),
  };
  console.info(
    `slowest answers while busy: contacts ${slowest(samples, '/v1/contacts').toFixed(0)} ms, healthz ${slowest(samples, '/healthz').toFixed(0)} ms; ` +
      `beside spinning threads: ${quiet.contacts.toFixed(0)} ms, ${quiet.health.toFixed(0)} ms; CPU oversubscribed ${stretch.toFixed(1)}x; ` +
      `bounds ${bounds.contacts.toFixed(0)} ms, ${bounds.health.toFixed(0)} ms`,
  );
  expect(slowest(samples, '/v1/contacts')).toBeLessThan(bounds.contacts);
  expect(slowest(samples, '/healthz')).toBeLessThan(bounds.health);
}

describe('one project cannot stall another', () => {
  it('saves templates that read a name tens of thousands of times, the analysis linear in their size', async () => {
    const { result, samples } = await sampledDuring(
      Promise.all([
        // 285 KB: took 17 s when the analysis was quadratic, with /healthz waiting meanwhile
        createTemplate(heavyKey, { subject: 'Many', html: '{{ contact.email }}'.repeat(15_000) }),
        createTemplate(heavyKey, {
          subject: 'Many more',
          html: '{{ x }}'.repeat(40_000),
          variables: [{ name: 'x', type: 'string', default: 'x' }],
        }),
      ]),
    );
    for (const res of result) expect(res.status, JSON.stringify(res.body)).toBe(200);
    expectPrompt(samples);
  }, 60_000);

  it("runs previews in a pool with a budget: another project's preview waits for no backlog", async () => {
    const cube = await createTemplate(heavyKey, {
      subject: 'Cube',
      html: '{% for a in (1..n) %}{% for b in (1..n) %}{% for c in (1..n) %}{% endfor %}{% endfor %}{% endfor %}',
      variables: [{ name: 'n', type: 'number', default: 2 }],
    });
    expect(cube.status, JSON.stringify(cube.body)).toBe(200);
    const light = await createTemplate(otherKey, {
      subject: 'Light',
      html: '<p>Hi {{ contact.first_name }}</p>',
    });
    expect(light.status, JSON.stringify(light.body)).toBe(200);

    const finished: string[] = [];
    const heavyPreviews = Array.from({ length: 8 }, (_, i) =>
      server
        .call('POST', `/v1/templates/${cube.body.id}/preview`, {
          key: heavyKey,
          body: { variables: { n: 200 } },
        })
        .then((res) => {
          finished.push(`heavy ${i}`);
          return res;
        }),
    );
    // the other project's preview arrives while the heavy project has a backlog
    await new Promise((resolve) => setImmediate(resolve));
    const lightPreview = server
      .call('POST', `/v1/templates/${light.body.id}/preview`, { key: otherKey, body: {} })
      .then((res) => {
        finished.push('light');
        return res;
      });
    const { result, samples } = await sampledDuring(Promise.all([lightPreview, ...heavyPreviews]));
    const [lightRes, ...heavyRes] = result;
    expect(lightRes.status).toBe(200);
    expect(lightRes.body.html).toContain('<p>Hi </p>');
    // each heavy preview is refused by its budget, with a 400 that says so
    for (const res of heavyRes) expectError(res, 400, /could not be rendered/);
    // the light preview waited at most for the heavy jobs already running, never for the backlog
    expect(finished.indexOf('light')).toBeLessThanOrEqual(TEMPLATE_THREADS);
    expectPrompt(samples);
  }, 90_000);

  it("queues MJML compiles per project: another project's save waits for no backlog", async () => {
    // CSS inlining is quadratic: each of these runs to the compile budget and is refused
    const slow = `<mjml><mj-head><mj-style inline="inline">${'.a{color:red}'.repeat(12_000)}</mj-style></mj-head><mj-body><mj-section><mj-column><mj-text>${'<p class="a">x</p>'.repeat(12_000)}</mj-text></mj-column></mj-section></mj-body></mjml>`;
    const finished: string[] = [];
    const heavySaves = Array.from({ length: 5 }, (_, i) =>
      createTemplate(heavyKey, { subject: 'Slow', mjml: slow }).then((res) => {
        finished.push(`heavy ${i}`);
        return res;
      }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    const lightSave = createTemplate(otherKey, {
      subject: 'Quick',
      mjml: '<mjml><mj-body><mj-section><mj-column><mj-text>Quick</mj-text></mj-column></mj-section></mj-body></mjml>',
    }).then((res) => {
      finished.push('light');
      return res;
    });
    const { result, samples } = await sampledDuring(Promise.all([lightSave, ...heavySaves]));
    const [lightRes, ...heavyRes] = result;
    expect(lightRes.status, JSON.stringify(lightRes.body)).toBe(200);
    for (const res of heavyRes) expectError(res, 400, /could not be compiled/);
    expect(finished.indexOf('light')).toBeLessThanOrEqual(TEMPLATE_THREADS);
    expectPrompt(samples);
  }, 90_000);
});
