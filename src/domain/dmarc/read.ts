import { FairWorkerPool } from '../templates/fair-pool.ts';
import type { ReadMessage } from './extract.ts';
import { REPORT_READ_CPU_MS, REPORT_READ_MEMORY_MB } from './limits.ts';

/**
 * DMARC and TLS report messages are read off the event loop (issue 47): in one thread of their own,
 * one message at a time, the senders taking turns (a host that mails many waits behind its own),
 * each within a CPU-time and a memory limit. What the thread cannot read in them, or a message that
 * passes a limit, is an unreadable report with the reason, never an error the MX would answer 451.
 */

const pool = new FairWorkerPool<Uint8Array, ReadMessage>({
  script: new URL('./read-worker.ts', import.meta.url),
  threads: 1,
  memoryMb: REPORT_READ_MEMORY_MB,
  outOfMemory: `the message's reports need more than ${REPORT_READ_MEMORY_MB} MB of memory to read`,
  stopped: 'the thread reading the reports stopped',
});

const BUDGET = {
  cpuMs: REPORT_READ_CPU_MS,
  // CPU time is the budget; wall-clock time a backstop for a starved thread
  wallMs: 5 * REPORT_READ_CPU_MS,
  overBudget: `the message's reports could not be read within ${REPORT_READ_CPU_MS / 1000} s of CPU time`,
};

/** The reports a received message carries (extract.ts), read in the report thread; `sender` takes turns. */
export async function readReports(raw: Buffer, sender: string): Promise<ReadMessage> {
  // the thread gets a copy: of the message's own bytes, not of a larger buffer they may lie in
  const own = raw.byteOffset === 0 && raw.byteLength === raw.buffer.byteLength;
  try {
    return await pool.run(sender, own ? raw : new Uint8Array(raw), BUDGET);
  } catch (err) {
    return { from: null, reports: [{ kind: 'unreadable', reason: (err as Error).message, file: null }] };
  }
}
