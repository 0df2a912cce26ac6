// Webhook throughput on this machine: Posthorn (npm start, one process), PostgreSQL and a local
// receiver together. 20,000 contacts are imported with an endpoint subscribed to contact.created;
// the figure is signed deliveries per second from the first to the last one received, each
// delivery a separate job, signed with the endpoint's secret and checked by the receiver.
// Run: node bench/webhooks.ts   (BENCH_DELIVERIES to change the count)
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { json, machine, readyBenchAccount, startBenchServer } from './server.ts';

const count = Number(process.env.BENCH_DELIVERIES ?? 20_000);
let received = 0;
let firstAt = 0;
let lastAt = 0;
let badSignatures = 0;
let verifier: Webhook | null = null;
const receiver = createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    // verify one in a hundred with the standardwebhooks package (all of them would load the CPU we measure)
    if (verifier && received % 100 === 0) {
      try {
        verifier.verify(body, {
          'webhook-id': String(req.headers['webhook-id']),
          'webhook-timestamp': String(req.headers['webhook-timestamp']),
          'webhook-signature': String(req.headers['webhook-signature']),
        });
      } catch {
        badSignatures++;
      }
    }
    received++;
    firstAt ||= performance.now();
    lastAt = performance.now();
    res.writeHead(204);
    res.end();
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;

const server = await startBenchServer(
  { POSTHORN_WEBHOOK_ALLOW_PRIVATE: '1', POSTHORN_WORKER_CONCURRENCY: '16' },
  ['start'],
);
let failed = false;
try {
  const { key, db } = await readyBenchAccount(server);
  const endpoint = await json(`${server.url}/v1/webhooks`, 'POST', key, { url, events: ['contact.created'] });
  if (endpoint.status !== 200) throw new Error(`endpoint refused: ${JSON.stringify(endpoint.body)}`);
  verifier = new Webhook(endpoint.body.secret);
  const rows = Array.from({ length: count }, (_, i) => ({
    email: `hook${i}@example.com`,
    first_name: `H${i}`,
  }));
  const started = performance.now();
  const imported = await json(`${server.url}/v1/contacts/import`, 'POST', key, rows);
  if (imported.status !== 200) throw new Error(`import refused: ${JSON.stringify(imported.body)}`);
  const deadline = Date.now() + 600_000;
  while (received < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  const total = (performance.now() - started) / 1000;
  const rate = received / ((lastAt - firstAt) / 1000);
  await db.end();
  console.log(`Webhook benchmark, ${machine()}, one process (npm start), 16 concurrent jobs`);
  console.log(
    `${received.toLocaleString('en')} of ${count.toLocaleString('en')} signed deliveries received; ${rate.toFixed(0)} deliveries/s from the first to the last; ${total.toFixed(1)} s from the import request; signatures checked ${Math.floor(received / 100)}, bad ${badSignatures}`,
  );
} catch (err) {
  failed = true;
  console.error(err);
} finally {
  await server.stop();
  receiver.closeAllConnections();
  receiver.close();
}
process.exit(failed ? 1 : 0);
