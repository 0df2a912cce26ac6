import { ValidationError } from '../core/errors.ts';
import { htmlLiquid, LIQUID_LIMITS, namesRead, parseLiquid, textLiquid } from './liquid.ts';
import { answerJobs } from './pool-worker.ts';
import { type RenderSource, renderBudget, renderTemplate, SOURCES_KEPT } from './render.ts';
import type { RenderJob, RenderJobResult } from './render-pool.ts';

// the sources this thread was sent, by cache key: the pool sends a source once, then its key alone
const sources = new Map<string, RenderSource>();

function sourceOf(sent: RenderSource): RenderSource {
  if (!sent.cacheKey) return sent;
  if (sent.compiled_html !== undefined) {
    if (!sources.has(sent.cacheKey)) {
      // the oldest goes first; the pool side forgets before this thread does
      if (sources.size >= SOURCES_KEPT) sources.delete(sources.keys().next().value as string);
      sources.set(sent.cacheKey, sent);
    }
    return sent;
  }
  const kept = sources.get(sent.cacheKey);
  if (!kept) throw new Error(`the render thread was sent an unknown source (${sent.cacheKey})`);
  return kept;
}

// Runs in the render pool's threads (render-pool.ts): Liquid parsing, the analysis of the names a
// template reads, and renders, so a heavy template stalls one of these threads and never the API.
answerJobs<RenderJob, RenderJobResult>((job) => {
  if (job.kind === 'names')
    return {
      names: job.fields.map(({ field, value, html }) => {
        const liquid = html ? htmlLiquid : textLiquid;
        return namesRead(liquid, parseLiquid(liquid, value, field));
      }),
    };
  // the renders of one job share one budget, as the renders of one request always did: the pool
  // stops the thread past the job's CPU time, so liquidjs's own (wall-clock) limit here is only the
  // pool's backstop (a machine busy with other work stretches wall-clock time, not CPU time)
  const budget = renderBudget(LIQUID_LIMITS.jobWallMs);
  let chars = 0;
  return {
    rendered: job.items.map(({ source, given, contact, deriveText }) => {
      try {
        const rendered = renderTemplate(sourceOf(source), given, contact, budget, { deriveText });
        chars += rendered.subject.length + rendered.html.length + rendered.text.length;
        if (chars > LIQUID_LIMITS.jobOutputChars)
          throw new ValidationError(
            `The messages could not be rendered: together they would be over ${LIQUID_LIMITS.jobOutputChars} characters`,
          );
        return rendered;
      } catch (err) {
        if (!job.each || !(err instanceof ValidationError)) throw err;
        return { error: err.message };
      }
    }),
  };
});
