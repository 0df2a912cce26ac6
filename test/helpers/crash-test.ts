import { afterAll, beforeAll, expect } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { insertVerifiedDomain } from './emails.ts';
import { type HeaderRecord, type HeaderSink, startHeaderSink } from './header-sink.ts';
import { startTestServer, type TestServer } from './server.ts';
import { workerProcesses } from './worker-process.ts';

/**
 * What a crash test runs on: the API in this process, workers in processes it can kill, and a sink
 * that keeps only recipients and two headers (tens of thousands of whole messages would not fit the
 * test's memory). Call at the top of the test file: it starts them before the tests and stops them
 * after; `server` and `sink` are there once the tests run.
 */
export function crashTestBed(secret: string) {
  let server: TestServer | undefined;
  let sink: HeaderSink | undefined;
  const workers = workerProcesses(() => ({ databaseUrl: bed.server.databaseUrl, secret }));

  beforeAll(async () => {
    server = await startTestServer({ POSTHORN_SECRET: secret }, ['api']);
    sink = await startHeaderSink();
  });
  afterAll(async () => {
    await workers.stopAll();
    await server?.close();
    await sink?.close();
  });

  const bed = {
    get server(): TestServer {
      if (!server) throw new Error('the crash test server is not started (used outside a test?)');
      return server;
    },
    get sink(): HeaderSink {
      if (!sink) throw new Error('the crash test sink is not started (used outside a test?)');
      return sink;
    },
    workers,
    /** A worker relaying to `relay` that a killed one's jobs come back to within seconds. */
    startWorker: (relay: string) =>
      workers.start(relay, { POSTHORN_STALE_WORKER_SECONDS: '2', POSTHORN_WORKER_CONCURRENCY: '10' }),
    /**
     * A confirmed account that may send as much as it likes from `domain` (the shared domain is
     * capped per day on every plan), with the footer address marketing mail needs. The sign-up
     * code goes through a worker of its own to the test server's own (parsing) sink.
     */
    async marketingAccount(domain: string) {
      const signupWorker = bed.startWorker(bed.server.sink.url);
      const account = await bed.server.signupConfirmed();
      await workers.stop(signupWorker, 'SIGTERM');
      const ctx = bed.server.runtime.ctx;
      await setWorkspacePlan(ctx, account.workspace.id, 'unlimited');
      await insertVerifiedDomain(bed.server, account.project.id, domain);
      const footer = await bed.server.call('PATCH', '/v1/me/footer', {
        key: account.project_key.key,
        body: { address: 'Crash Tests Ltd, 4 Quay Street, Bristol BS1 4DB' },
      });
      expect(footer.status, JSON.stringify(footer.body)).toBe(200);
      return account;
    },
  };
  return bed;
}

/** Distinct Message-IDs per recipient address, and how many deliveries repeated one. */
export function messageIdsByRecipient(messages: HeaderRecord[]) {
  const byRecipient = new Map<string, Set<string>>();
  let repeated = 0;
  for (const m of messages)
    for (const to of m.to) {
      const ids = byRecipient.get(to) ?? new Set<string>();
      if (ids.has(m.messageId as string)) repeated++;
      ids.add(m.messageId as string);
      byRecipient.set(to, ids);
    }
  return { byRecipient, repeated };
}
