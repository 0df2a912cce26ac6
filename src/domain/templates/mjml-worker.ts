import mjml2html from 'mjml';
import { ValidationError } from '../core/errors.ts';
import { keepLiquidTags } from './mjml-liquid.ts';
import { answerJobs } from './pool-worker.ts';

/** What the worker answers for one document: the HTML, or MJML's errors (line, message, element). */
export type MjmlAnswer =
  | { html: string }
  | { errors: { line: number; message: string; tagName: string }[]; message: string };

// Runs in the MJML pool's threads (mjml.ts): a large or hostile document (CSS inlining is quadratic)
// stalls one thread, which the pool stops past its budget, and never the API.
answerJobs<string, MjmlAnswer>(async (source) => {
  try {
    const result = await mjml2html(keepLiquidTags(source), {
      validationLevel: 'strict',
      ignoreIncludes: true,
      keepComments: false,
    });
    return { html: result.html };
  } catch (err) {
    // a Liquid tag MJML cannot keep: the pool gives it back as a 400
    if (err instanceof ValidationError) throw err;
    const errors = (err as { errors?: { line: number; message: string; tagName: string }[] }).errors ?? [];
    return {
      errors: errors.map(({ line, message, tagName }) => ({ line, message, tagName })),
      message: String((err as Error).message),
    };
  }
});
