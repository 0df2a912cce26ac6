import { Worker } from 'node:worker_threads';
import { ValidationError } from '../core/errors.ts';
import type { MjmlAnswer } from './mjml-worker.ts';

/** What one compile may take, in the worker: past it the worker is stopped and the save refused. */
export const MJML_LIMITS = { compileMs: 2_000, memoryMb: 256 };

/** The column of `<tagName` on a 1-based line of the source (MJML reports lines only). */
function columnOf(source: string, line: number, tagName: string): number {
  const text = source.split('\n')[line - 1] ?? '';
  const at = text.indexOf(`<${tagName}`);
  return at >= 0 ? at + 1 : 1;
}

interface CompileWorker {
  worker: Worker;
  ready: Promise<void>;
}

// one worker, started on first use and after a stop; compiles take turns (saves are rare)
let current: CompileWorker | null = null;
let turn: Promise<unknown> = Promise.resolve();

function startWorker(): CompileWorker {
  const worker = new Worker(new URL('./mjml-worker.ts', import.meta.url), {
    resourceLimits: { maxOldGenerationSizeMb: MJML_LIMITS.memoryMb },
  });
  // an idle worker must not keep the process alive
  worker.unref();
  const ready = new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
  });
  const started = { worker, ready };
  worker.once('exit', () => {
    if (current === started) current = null;
  });
  return started;
}

/** One document through the worker, within the time limit; a stalled or exhausted worker is stopped. */
async function compileInWorker(source: string): Promise<MjmlAnswer> {
  current ??= startWorker();
  const { worker, ready } = current;
  await ready;
  const stop = () => {
    if (current?.worker === worker) current = null;
    void worker.terminate();
  };
  return new Promise<MjmlAnswer>((resolve, reject) => {
    const settle = (finish: () => void) => {
      clearTimeout(timer);
      worker.off('message', onMessage);
      worker.off('error', onError);
      finish();
    };
    const onMessage = (answer: MjmlAnswer) => settle(() => resolve(answer));
    const onError = (err: Error & { code?: string }) =>
      settle(() => {
        stop();
        reject(
          err.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? new ValidationError('`mjml` could not be compiled: it needs too much memory')
            : err,
        );
      });
    const timer = setTimeout(
      () =>
        settle(() => {
          stop();
          reject(
            new ValidationError(
              `\`mjml\` could not be compiled within ${MJML_LIMITS.compileMs / 1000} s: make the document smaller (fewer elements or inlined CSS rules)`,
            ),
          );
        }),
      MJML_LIMITS.compileMs,
    );
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.postMessage(source);
  });
}

/**
 * Compiles MJML to HTML once (per saved draft and per published version), strictly: an unknown
 * element, a misplaced one or a bad attribute is a 400 naming line and column. Liquid inside text and
 * attribute values passes through untouched. `mj-include` is never followed (no file access). The
 * compile runs in a worker thread with a time and memory limit, so no document can stall the API.
 */
export async function compileMjml(source: string): Promise<string> {
  const run = () => compileInWorker(source);
  const result = turn.then(run, run);
  turn = result.catch(() => {});
  const answer = await result;
  if ('errors' in answer) {
    const e = answer.errors[0];
    if (!e) throw new ValidationError(`\`mjml\` could not be compiled: ${answer.message.split('\n')[0]}`);
    throw new ValidationError(
      `\`mjml\` line ${e.line}, column ${columnOf(source, e.line, e.tagName)}: ${e.message}` +
        (answer.errors.length > 1 ? ` (and ${answer.errors.length - 1} more)` : ''),
    );
  }
  if (!/<mj-body[\s>]/.test(source) || !/<mjml[\s>]/.test(source))
    throw new ValidationError('`mjml` must be an MJML document: <mjml><mj-body>...</mj-body></mjml>');
  return answer.html;
}
