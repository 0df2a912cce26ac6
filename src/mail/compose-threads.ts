import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { ComposeInput } from './compose.ts';
import type { ComposeAnswer, ComposeJob } from './compose-thread.ts';
import type { DkimKey } from './dkim.ts';

/**
 * Composing and DKIM-signing a message off the event loop (issue 46): in bench:direct the worker's
 * event loop was the bottleneck, and a fifth of its time went to building and signing messages
 * (the canonical forms, the body hash, and handing each RSA signature to libuv's pool and back).
 * Messages asked for in the same turn of the event loop go to a thread together, as one job; the
 * thread signs them itself. A thread that stops fails its messages (the delivery tries them again
 * later) and is replaced at the next message.
 */

const SCRIPT = new URL('./compose-thread.ts', import.meta.url);
/** The most messages one job carries. */
const MAX_PER_JOB = 64;
/** A thread's heap: a message and its attachments (up to 40 MB) at a time, with room. */
const THREAD_HEAP_MB = 512;

interface Asked {
  input: ComposeInput;
  key: DkimKey | null;
  resolve: (raw: Buffer) => void;
  reject: (err: Error) => void;
}

interface Thread {
  worker: Worker;
  /** Jobs sent and not yet answered, by id. */
  jobs: Map<number, Asked[]>;
  /** Messages in those jobs. */
  load: number;
}

export class ComposeThreads {
  private readonly threads: Thread[] = [];
  private readonly size: number;
  private asked: Asked[] = [];
  private flushQueued = false;
  private nextId = 0;

  constructor(size = Math.max(1, Math.min(4, availableParallelism() - 1))) {
    this.size = size;
  }

  /** The message's bytes, composed and signed in a thread. */
  compose(input: ComposeInput, key: DkimKey | null): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.asked.push({ input, key, resolve, reject });
      if (this.flushQueued) return;
      this.flushQueued = true;
      setImmediate(() => this.flush());
    });
  }

  /** Stops the threads; messages still being composed fail. */
  async close(): Promise<void> {
    await Promise.all(this.threads.map((t) => t.worker.terminate()));
  }

  /** What was asked in this turn, in jobs spread over the threads (the least loaded first). */
  private flush() {
    this.flushQueued = false;
    while (this.threads.length < this.size) this.threads.push(this.start());
    const perJob = Math.min(MAX_PER_JOB, Math.ceil(this.asked.length / this.threads.length));
    while (this.asked.length > 0) {
      const messages = this.asked.splice(0, perJob);
      const thread = this.threads.reduce((a, b) => (b.load < a.load ? b : a));
      const id = ++this.nextId;
      thread.jobs.set(id, messages);
      thread.load += messages.length;
      thread.worker.ref();
      const job: ComposeJob = { id, messages: messages.map(({ input, key }) => ({ input, key })) };
      thread.worker.postMessage(job);
    }
  }

  private start(): Thread {
    const worker = new Worker(SCRIPT, { resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB } });
    worker.unref();
    const thread: Thread = { worker, jobs: new Map(), load: 0 };
    worker.on('message', ({ id, results }: ComposeAnswer) => {
      const messages = thread.jobs.get(id);
      if (!messages) return;
      thread.jobs.delete(id);
      thread.load -= messages.length;
      if (thread.load === 0) worker.unref();
      messages.forEach((asked, i) => {
        const result = results[i];
        if ('raw' in result)
          asked.resolve(Buffer.from(result.raw.buffer, result.raw.byteOffset, result.raw.byteLength));
        else asked.reject(new Error(result.error));
      });
    });
    const stopped = (why: string) => {
      const at = this.threads.indexOf(thread);
      if (at !== -1) this.threads.splice(at, 1);
      for (const messages of thread.jobs.values())
        for (const asked of messages) asked.reject(new Error(`the compose thread stopped: ${why}`));
      thread.jobs.clear();
    };
    worker.on('error', (err) => stopped(err.message));
    worker.on('exit', (code) => stopped(`exit code ${code}`));
    return thread;
  }
}

let shared: ComposeThreads | null = null;

/** The process's compose threads (started with the first message). */
export function composeThreads(): ComposeThreads {
  shared ??= new ComposeThreads();
  return shared;
}
