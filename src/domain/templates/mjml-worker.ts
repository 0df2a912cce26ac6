import { parentPort } from 'node:worker_threads';
import mjml2html from 'mjml';

/** What the worker answers for one document: the HTML, or MJML's errors (line, message, element). */
export type MjmlAnswer =
  | { html: string }
  | { errors: { line: number; message: string; tagName: string }[]; message: string };

// Runs in a worker thread started by mjml.ts: a large or hostile document (CSS inlining is quadratic)
// then stalls this thread, which mjml.ts stops after a time limit, and never the API.
parentPort?.on('message', async (source: string) => {
  let answer: MjmlAnswer;
  try {
    const result = await mjml2html(source, {
      validationLevel: 'strict',
      ignoreIncludes: true,
      keepComments: false,
    });
    answer = { html: result.html };
  } catch (err) {
    const errors = (err as { errors?: { line: number; message: string; tagName: string }[] }).errors ?? [];
    answer = {
      errors: errors.map(({ line, message, tagName }) => ({ line, message, tagName })),
      message: String((err as Error).message),
    };
  }
  parentPort?.postMessage(answer);
});
parentPort?.postMessage('ready');
