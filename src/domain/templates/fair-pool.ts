import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { ValidationError } from '../core/errors.ts';
import type { PoolReply } from './pool-worker.ts';

/** What one job may spend: CPU time in its thread, and a wall-clock backstop for a starved thread. */
export interface JobBudget {
  cpuMs: number;
  wallMs: number;
  /** Ends the sentence "… could not be …": what the user sees when the budget runs out. */
  overBudget: string;
}

export interface FairPoolOptions<Req, Res> {
  /** The worker script: it calls `answerJobs` (pool-worker.ts). */
  script: URL;
  threads: number;
  memoryMb: number;
  /** The message when a job's thread runs out of memory. */
  outOfMemory: string;
  /** The reason a job is refused when its thread stops otherwise (the pool's work named). */
  stopped?: string;
  /**
   * Shapes a request for the thread that runs it, with a memo of that thread's own (empty for a new
   * thread): what the thread already holds need not be sent again.
   */
  prepare?: (request: Req, memo: Set<string>) => Req;
  /** How queued jobs of one owner go to a thread together (see JobMerge). */
  merge?: JobMerge<Req, Res>;
}

/**
 * Small jobs of one owner taken by a thread together: a hop to a thread and back costs more than a
 * render of a message, and on a busy machine each hop waits for the scheduler. A merged job runs
 * within the budget of one; when it fails for any reason, its jobs run again one by one, so one
 * hostile job cannot fail the others it was merged with.
 */
export interface JobMerge<Req, Res> {
  /** Whether `next` may join the jobs already taken together. */
  fits(taken: Req[], next: Req): boolean;
  combine(requests: Req[]): Req;
  /** The merged result cut back into each job's result (or its error). */
  split(result: Res, requests: Req[]): (Res | Error)[];
}

/**
 * Where a job waits in its owner's queue: `background` work (delivery rendering stored messages
 * again) waits behind the owner's other queued jobs, so a project's delivery backlog never delays its
 * own requests, flow rounds or campaign batches by more than the jobs already running.
 */
export type JobLane = 'foreground' | 'background';

interface Job<Req, Res> {
  owner: string;
  request: Req;
  budget: JobBudget;
  lane: JobLane;
  resolve: (value: Res) => void;
  reject: (err: Error) => void;
  /** Runs alone: it was in a merged job that failed. */
  solo?: boolean;
}

interface Thread<Req, Res> {
  worker: Worker;
  ready: boolean;
  /** The thread's CPU time (µs) when its current job started: the job's spending is measured from it. */
  cpuBase: number;
  job: Job<Req, Res> | null;
  startedAt: number;
  nextId: number;
  memo: Set<string>;
}

// how often a busy thread's CPU time is read; a job shorter than this is never measured
const WATCH_MS = 25;

/**
 * Work that user input can make expensive (MJML compiles, Liquid renders), off the event loop: a few
 * worker threads, each job within a CPU-time budget (past it the thread is stopped and the job
 * refused), and queues per owner (a project) served in turn, so one owner's backlog delays another's
 * job by at most the jobs already running.
 */
export class FairWorkerPool<Req, Res> {
  private readonly threads: Thread<Req, Res>[] = [];
  private readonly queues = new Map<string, Job<Req, Res>[]>();
  /**
   * When each owner's last job started (a count of jobs started): the owner with queued jobs that was
   * served longest ago goes next, and one never served goes first, so a newcomer waits only for the
   * jobs already running, and owners with backlogs take turns.
   */
  private readonly lastServed = new Map<string, number>();
  private started = 0;
  private watch: NodeJS.Timeout | null = null;

  private readonly options: FairPoolOptions<Req, Res>;

  constructor(options: FairPoolOptions<Req, Res>) {
    this.options = options;
  }

  /**
   * Runs `request` in a thread when `owner`'s turn comes, behind the owner's jobs queued before it
   * (a foreground job only behind its foreground ones); rejects with a ValidationError past `budget`.
   */
  run(owner: string, request: Req, budget: JobBudget, lane: JobLane = 'foreground'): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      const job = { owner, request, budget, lane, resolve, reject };
      this.enqueue(owner, [job], 'last');
      this.dispatch();
    });
  }

  /**
   * Puts jobs of one lane in their owner's queue, `first` or `last` in that lane: foreground jobs
   * ahead of every background one, background ones at the end of the queue.
   */
  private enqueue(owner: string, jobs: Job<Req, Res>[], where: 'first' | 'last') {
    const queue = this.queues.get(owner);
    if (!queue) {
      this.queues.set(owner, jobs);
      return;
    }
    const background = queue.findIndex((queued) => queued.lane === 'background');
    const laneStart = jobs[0].lane === 'background' ? background : 0;
    const laneEnd = jobs[0].lane === 'background' ? -1 : background;
    const at = where === 'first' ? laneStart : laneEnd;
    queue.splice(at < 0 ? queue.length : at, 0, ...jobs);
  }

  /** Jobs waiting for a thread (all owners). */
  get waiting(): number {
    let n = 0;
    for (const queue of this.queues.values()) n += queue.length;
    return n;
  }

  private dispatch() {
    while (this.queues.size > 0) {
      const thread = this.idleThread();
      if (!thread) return;
      const owner = this.nextOwner();
      const queue = this.queues.get(owner) as Job<Req, Res>[];
      const job = this.merged(queue);
      if (queue.length === 0) this.queues.delete(owner);
      this.lastServed.set(owner, ++this.started);
      this.start(thread, job);
    }
  }

  /** The next job of a queue, with the queued jobs that may go with it merged into one. */
  private merged(queue: Job<Req, Res>[]): Job<Req, Res> {
    const first = queue.shift() as Job<Req, Res>;
    const merge = this.options.merge;
    if (!merge || first.solo) return first;
    const taken = [first];
    const requests = [first.request];
    // jobs of one lane only: a foreground job never waits for background renders merged into it
    while (
      queue.length > 0 &&
      !queue[0].solo &&
      queue[0].lane === first.lane &&
      merge.fits(requests, queue[0].request)
    ) {
      const next = queue.shift() as Job<Req, Res>;
      taken.push(next);
      requests.push(next.request);
    }
    if (taken.length === 1) return first;
    return {
      owner: first.owner,
      request: merge.combine(requests),
      budget: first.budget,
      lane: first.lane,
      resolve: (value) => {
        const results = merge.split(value, requests);
        for (const [i, job] of taken.entries()) {
          const result = results[i];
          if (result instanceof Error) job.reject(result);
          else job.resolve(result);
        }
      },
      // each again on its own, first in its lane of the owner's queue
      reject: () =>
        this.enqueue(
          first.owner,
          taken.map((job) => ({ ...job, solo: true })),
          'first',
        ),
    };
  }

  /** The owner with queued jobs served longest ago (the first queued among those never served). */
  private nextOwner(): string {
    let next = '';
    let nextServed = Number.POSITIVE_INFINITY;
    for (const owner of this.queues.keys()) {
      const served = this.lastServed.get(owner) ?? 0;
      if (served < nextServed) {
        next = owner;
        nextServed = served;
      }
    }
    // owners long idle are forgotten (an owner never served counts as served longest ago anyway)
    if (this.lastServed.size > 10_000)
      for (const [owner, served] of this.lastServed)
        if (served < this.started - 1_000 && !this.queues.has(owner)) this.lastServed.delete(owner);
    return next;
  }

  private idleThread(): Thread<Req, Res> | undefined {
    const idle = this.threads.find((t) => t.ready && t.job === null);
    if (idle) return idle;
    // a starting thread takes the next job as soon as it is ready
    if (this.threads.some((t) => !t.ready)) return undefined;
    if (this.threads.length < this.options.threads) this.spawn();
    return undefined;
  }

  private spawn() {
    const worker = new Worker(this.options.script, {
      resourceLimits: {
        maxOldGenerationSizeMb: this.options.memoryMb,
        maxYoungGenerationSizeMb: THREAD_YOUNG_MB,
      },
    });
    // an idle thread must not keep the process alive
    worker.unref();
    const thread: Thread<Req, Res> = {
      worker,
      ready: false,
      cpuBase: 0,
      job: null,
      startedAt: 0,
      nextId: 0,
      memo: new Set(),
    };
    this.threads.push(thread);
    worker.on('message', (reply: PoolReply<Res>) => this.onReply(thread, reply));
    worker.on('error', (err: Error & { code?: string }) =>
      this.retire(
        thread,
        err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? new ValidationError(this.options.outOfMemory) : err,
      ),
    );
    worker.on('exit', () =>
      this.retire(thread, new Error(this.options.stopped ?? 'the template worker thread stopped')),
    );
  }

  private start(thread: Thread<Req, Res>, job: Job<Req, Res>) {
    thread.job = job;
    thread.startedAt = performance.now();
    thread.worker.ref();
    const request = this.options.prepare ? this.options.prepare(job.request, thread.memo) : job.request;
    thread.worker.postMessage({ id: ++thread.nextId, request });
    this.watch ??= setInterval(() => this.watchBudgets(), WATCH_MS).unref();
  }

  private onReply(thread: Thread<Req, Res>, reply: PoolReply<Res>) {
    thread.cpuBase = reply.cpu;
    if (reply.kind === 'ready') {
      thread.ready = true;
      this.dispatch();
      return;
    }
    const job = thread.job;
    if (!job || reply.id !== thread.nextId) return;
    thread.job = null;
    thread.worker.unref();
    if (reply.kind === 'done') job.resolve(reply.value);
    else job.reject(reply.validation ? new ValidationError(reply.message) : new Error(reply.message));
    this.stopWatchingWhenIdle();
    this.dispatch();
  }

  /** Stops a thread; its job (if any) is rejected with `err`, and the next job gets a new thread. */
  private retire(thread: Thread<Req, Res>, err: Error) {
    const at = this.threads.indexOf(thread);
    if (at < 0) return;
    this.threads.splice(at, 1);
    const job = thread.job;
    thread.job = null;
    void thread.worker.terminate();
    job?.reject(err);
    this.stopWatchingWhenIdle();
    this.dispatch();
  }

  private stopWatchingWhenIdle() {
    if (this.watch && this.threads.every((t) => t.job === null)) {
      clearInterval(this.watch);
      this.watch = null;
    }
  }

  private watchBudgets() {
    const now = performance.now();
    for (const thread of this.threads) {
      const job = thread.job;
      if (!job || now - thread.startedAt < WATCH_MS) continue;
      const over = () => this.retire(thread, new ValidationError(`${job.budget.overBudget}`));
      if (now - thread.startedAt > job.budget.wallMs) {
        over();
        continue;
      }
      thread.worker.cpuUsage().then(
        ({ user, system }) => {
          if (thread.job === job && (user + system - thread.cpuBase) / 1000 > job.budget.cpuMs) over();
        },
        // the thread stopped meanwhile: its exit handler settles the job
        () => {},
      );
    }
  }
}

/**
 * The young generation (V8's nursery) of a pool thread. Node derives it from the old generation's
 * cap when only that is set: 192 MB beside 256 MB. Renders allocate fast and keep little, so a busy
 * thread's nursery grows towards that size, all of it resident: a process rendering 100,000
 * campaign messages through the pool as fast as it could peaked at 211-237 MB, and at 188-190 MB
 * with 16 MB, in the same time (3.9-4.2 s against 4.1-4.2 s); at 8-12 MB the extra scavenges cost
 * 10 %. The MJML pool gains alike: 120 compiles of the newsletter starter peaked at 160-163 MB
 * against 215-244 MB, in 0.42-0.46 s against 0.52-0.53 s.
 */
export const THREAD_YOUNG_MB = 16;

/** Threads for template work: one fewer than the cores (the event loop and PostgreSQL need one), 1 to 4. */
export const TEMPLATE_THREADS = Math.max(1, Math.min(4, availableParallelism() - 1));
