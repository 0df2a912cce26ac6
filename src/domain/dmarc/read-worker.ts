import { answerJobs } from '../templates/pool-worker.ts';
import { type ReadMessage, readMessage } from './extract.ts';

// Runs in the report thread (read.ts): a message's MIME, its decompression and its XML or JSON are
// read here, so a zip bomb or a report of 100,000 records stalls this thread, never the event loop.
answerJobs<Uint8Array, ReadMessage>((raw) =>
  readMessage(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)),
);
