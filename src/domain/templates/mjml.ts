import { ValidationError } from '../core/errors.ts';
import { FairWorkerPool, TEMPLATE_THREADS } from './fair-pool.ts';
import type { MjmlAnswer } from './mjml-worker.ts';

/** What one compile may take, in a pool thread: past it the thread is stopped and the save refused. */
export const MJML_LIMITS = { compileMs: 2_000, memoryMb: 256 };

/** The column of `<tagName` on a 1-based line of the source (MJML reports lines only). */
function columnOf(source: string, line: number, tagName: string): number {
  const text = source.split('\n')[line - 1] ?? '';
  const at = text.indexOf(`<${tagName}`);
  return at >= 0 ? at + 1 : 1;
}

const mjmlPool = new FairWorkerPool<string, MjmlAnswer>({
  script: new URL('./mjml-worker.ts', import.meta.url),
  threads: TEMPLATE_THREADS,
  memoryMb: MJML_LIMITS.memoryMb,
  outOfMemory: '`mjml` could not be compiled: it needs too much memory',
});

const COMPILE_BUDGET = {
  cpuMs: MJML_LIMITS.compileMs,
  // CPU time is the budget; wall-clock time is a generous backstop (a busy machine stretches it)
  wallMs: 30_000,
  overBudget: `\`mjml\` could not be compiled within ${MJML_LIMITS.compileMs / 1000} s of CPU time: make the document smaller (fewer elements or inlined CSS rules)`,
};

/**
 * Compiles MJML to HTML once (per saved draft and per published version), strictly: an unknown
 * element, a misplaced one or a bad attribute is a 400 naming line and column. Liquid inside text and
 * attribute values passes through untouched. `mj-include` is never followed (no file access). The
 * compile runs in a pool thread with a CPU-time and memory limit, queued behind `owner`'s (the
 * project's) other compiles, so no document can stall the API or another project's saves.
 */
export async function compileMjml(source: string, owner: string): Promise<string> {
  const answer = await mjmlPool.run(owner, source, COMPILE_BUDGET);
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
