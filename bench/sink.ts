import { SMTPServer } from 'smtp-server';

/**
 * A lean SMTP sink for benchmarks: counts messages and remembers Message-IDs with when each first
 * arrived (performance.now()), parses nothing else.
 */
export async function startBenchSink() {
  const messageIds = new Set<string>();
  const arrivals = new Map<string, number>();
  let count = 0;
  const waiters: { n: number; resolve: () => void }[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    maxClients: 200,
    onData(stream, _session, callback) {
      let head = '';
      stream.on('data', (chunk: Buffer) => {
        if (head.length < 8192) head += chunk.toString('latin1');
      });
      stream.on('end', () => {
        const id = /^Message-ID:\s*(<[^>]+>)/im.exec(head)?.[1];
        if (id) messageIds.add(id);
        if (id && !arrivals.has(id)) arrivals.set(id, performance.now());
        count++;
        for (const w of [...waiters]) {
          if (count >= w.n) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve();
          }
        }
        callback();
      });
    },
  });
  // a client that dies mid-session (a killed worker) resets its connection: not the sink's problem
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as { port: number }).port;
  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    messageIds,
    arrivals,
    get count() {
      return count;
    },
    reset() {
      count = 0;
      messageIds.clear();
      arrivals.clear();
    },
    waitForCount(n: number, timeoutMs: number) {
      return new Promise<boolean>((resolve) => {
        if (count >= n) return resolve(true);
        const timer = setTimeout(() => resolve(false), timeoutMs);
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(timer);
            resolve(true);
          },
        });
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
