import { parentPort } from 'node:worker_threads';
import { type ComposeInput, composeMessage } from './compose.ts';
import type { DkimKey } from './dkim.ts';

/**
 * A compose thread (compose-threads.ts): builds and DKIM-signs each message of a job, and answers
 * with the bytes or the reason it could not. Buffers arrive as plain Uint8Arrays (structured
 * clone): the attachments are made Buffers again before nodemailer's composer reads them.
 */

export interface ComposeJob {
  id: number;
  messages: { input: ComposeInput; key: DkimKey | null }[];
}

export type ComposeAnswer = { id: number; results: ({ raw: Uint8Array } | { error: string })[] };

const asBuffer = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

async function composeOne(input: ComposeInput, key: DkimKey | null) {
  try {
    const attachments = input.attachments.map((a) => ({ ...a, content: asBuffer(a.content) }));
    const raw = await composeMessage({ ...input, attachments }, key, { signInThread: true });
    // a copy of its own (a small Buffer is a view of a shared pool), handed over rather than cloned
    return { raw: new Uint8Array(raw) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

const port = parentPort;
if (!port) throw new Error('compose-thread.ts runs in a worker thread');
port.on('message', async (job: ComposeJob) => {
  const results: ComposeAnswer['results'] = [];
  for (const { input, key } of job.messages) results.push(await composeOne(input, key));
  const transfer = results.flatMap((r) => ('raw' in r ? [r.raw.buffer as ArrayBuffer] : []));
  port.postMessage({ id: job.id, results } satisfies ComposeAnswer, transfer);
});
