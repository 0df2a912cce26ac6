import { ValidationError } from '../core/errors.ts';
import { FairWorkerPool, type JobLane, TEMPLATE_THREADS } from './fair-pool.ts';
import { LIQUID_LIMITS } from './liquid.ts';
import { type Rendered, type RenderSource, SOURCES_KEPT, type TemplateContact } from './render.ts';

/** One message to render: its source (a version, a draft or a campaign's content), data and contact. */
export interface RenderItem {
  source: RenderSource;
  given: Record<string, unknown> | undefined;
  contact: TemplateContact | null;
  /** False when only checking: the text part is not derived from the HTML. */
  deriveText?: boolean;
}

/** A Liquid field to parse and analyse: `html` fields are parsed with HTML escaping. */
export interface LiquidField {
  field: string;
  value: string;
  html: boolean;
}

export type RenderJob =
  | { kind: 'names'; fields: LiquidField[] }
  /** `each`: a failing message gives its own `{error}`; otherwise the job fails with the first. */
  | { kind: 'render'; items: RenderItem[]; each: boolean };

export type RenderOutcome = Rendered | { error: string };

export type RenderJobResult = { names: string[][] } | { rendered: RenderOutcome[] };

// How many sources the pool side remembers having sent a thread before it forgets them all: fewer
// than the thread keeps (SOURCES_KEPT; a version never changes, a draft's key names its edit), so
// whatever the pool side remembers the thread still has.
const SOURCES_REMEMBERED = SOURCES_KEPT - 100;

/** A source the thread already holds goes as its key alone: a 20 KB version is cloned once, not per job. */
function sendKnownSourcesByKey(job: RenderJob, sent: Set<string>): RenderJob {
  if (job.kind !== 'render') return job;
  return {
    ...job,
    items: job.items.map((item) => {
      const key = item.source.cacheKey;
      if (!key) return item;
      if (sent.has(key)) return { ...item, source: { cacheKey: key } as RenderSource };
      if (sent.size >= SOURCES_REMEMBERED) sent.clear();
      sent.add(key);
      return item;
    }),
  };
}

// a job's renders share one budget: background work (delivery) goes in jobs of this many
const ITEMS_PER_JOB = 100;

const renderPool = new FairWorkerPool<RenderJob, RenderJobResult>({
  script: new URL('./render-worker.ts', import.meta.url),
  threads: TEMPLATE_THREADS,
  memoryMb: 256,
  outOfMemory: 'The template could not be rendered: it needs too much memory',
  prepare: sendKnownSourcesByKey,
  merge: {
    fits: (taken, next) =>
      next.kind === 'render' &&
      taken.every((r) => r.kind === 'render') &&
      taken.reduce((n, r) => n + (r.kind === 'render' ? r.items.length : 0), 0) + next.items.length <=
        ITEMS_PER_JOB,
    combine: (requests) => ({
      kind: 'render',
      items: requests.flatMap((r) => (r.kind === 'render' ? r.items : [])),
      each: true,
    }),
    split: (result, requests) => {
      const rendered = (result as { rendered: RenderOutcome[] }).rendered;
      let at = 0;
      return requests.map((r) => {
        const count = r.kind === 'render' ? r.items.length : 0;
        const mine = rendered.slice(at, at + count);
        at += count;
        const failed = r.kind === 'render' && !r.each && mine.find((m) => 'error' in m);
        return failed && 'error' in failed ? new ValidationError(failed.error) : { rendered: mine };
      });
    },
  },
});

const RENDER_BUDGET = {
  cpuMs: LIQUID_LIMITS.jobCpuMs,
  // CPU time is the budget; wall-clock time only stops a thread that somehow escaped it, and is
  // generous because a machine busy with other work stretches it
  wallMs: LIQUID_LIMITS.jobWallMs,
  overBudget: `The template could not be rendered within ${LIQUID_LIMITS.jobCpuMs / 1000} s of CPU time: make its loops smaller`,
};

/**
 * The names each field reads (`{{ contact.first_name }}` → contact), parsed in a pool thread queued
 * behind `owner`'s other template work; a field that does not parse is a 400 naming line and column.
 */
export async function namesReadInPool(owner: string, fields: LiquidField[]): Promise<string[][]> {
  if (fields.length === 0) return [];
  const result = await renderPool.run(owner, { kind: 'names', fields }, RENDER_BUDGET);
  return (result as { names: string[][] }).names;
}

/**
 * Renders messages in pool threads queued behind `owner`'s (the project's) other template work,
 * within the CPU-time and output-size budget of a job: each message's outcome, a failure as
 * `{error}`. A job that runs out of budget fails every message in it with the reason. Delivery's
 * renders go in the `background` lane, behind the project's requests, flow rounds and batches.
 */
export async function renderEach(
  owner: string,
  items: RenderItem[],
  lane: JobLane = 'foreground',
): Promise<RenderOutcome[]> {
  const jobs: Promise<RenderOutcome[]>[] = [];
  for (let at = 0; at < items.length; at += ITEMS_PER_JOB) {
    const chunk = items.slice(at, at + ITEMS_PER_JOB);
    jobs.push(
      renderPool.run(owner, { kind: 'render', items: chunk, each: true }, RENDER_BUDGET, lane).then(
        (result) => (result as { rendered: RenderOutcome[] }).rendered,
        (err) => {
          if (!(err instanceof ValidationError)) throw err;
          return chunk.map(() => ({ error: err.message }));
        },
      ),
    );
  }
  return (await Promise.all(jobs)).flat();
}

/** One message rendered in the pool (see renderEach); a failure is thrown as a ValidationError. */
export async function renderInPool(owner: string, item: RenderItem): Promise<Rendered> {
  const result = await renderPool.run(owner, { kind: 'render', items: [item], each: false }, RENDER_BUDGET);
  return (result as { rendered: Rendered[] }).rendered[0];
}
