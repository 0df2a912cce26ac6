import { flushCompileCache } from 'node:module';
import { parentPort } from 'node:worker_threads';
import { ValidationError } from '../core/errors.ts';

/**
 * What a pool thread answers: `ready` once loaded, then one `done` or `failed` per job; each carries
 * the thread's CPU time so far (µs), from which the pool measures the next job's spending.
 */
export type PoolReply<Res> =
  | { kind: 'ready'; cpu: number }
  | { kind: 'done'; id: number; value: Res; cpu: number }
  | { kind: 'failed'; id: number; validation: boolean; message: string; cpu: number };

function cpuNow(): number {
  const { user, system } = process.threadCpuUsage();
  return user + system;
}

/** Serves a FairWorkerPool's jobs in this worker thread with `handle`, one at a time. */
export function answerJobs<Req, Res>(handle: (request: Req) => Res | Promise<Res>) {
  const port = parentPort;
  if (!port) throw new Error('answerJobs runs in a worker thread');
  port.on('message', async ({ id, request }: { id: number; request: Req }) => {
    let reply: PoolReply<Res>;
    try {
      reply = { kind: 'done', id, value: await handle(request), cpu: 0 };
    } catch (err) {
      reply = {
        kind: 'failed',
        id,
        validation: err instanceof ValidationError,
        message: (err as Error).message,
        cpu: 0,
      };
    }
    reply.cpu = cpuNow();
    port.postMessage(reply);
  });
  // the thread's modules are loaded: into Node's compile cache with them (see bin/posthorn.js)
  flushCompileCache();
  port.postMessage({ kind: 'ready', cpu: cpuNow() } satisfies PoolReply<Res>);
}
