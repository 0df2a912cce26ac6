import type { Readable } from 'node:stream';
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { ValidationError } from '../core/errors.ts';

/**
 * A CSV import's file as it arrives and as the import job reads it (issue 48: memory bounded): the
 * upload is read as a stream, its start checked before anything is stored, then written to
 * `import_chunks` in pieces of 1 MiB while its lines are counted; the job reads the pieces back
 * one at a time.
 */

export const CHUNK_BYTES = 1024 * 1024;
/** What the start of a file must hold for its header row to be checked: the header checks read 64 KiB. */
const HEAD_BYTES = 64 * 1024;

/** An upload larger than the route's limit (413, worded as Fastify's own limit is). */
export function tooLarge(method: string, url: string): Error {
  return Object.assign(new Error(`Request body is too large for ${method} ${url.split('?')[0]}`), {
    statusCode: 413,
  });
}

/**
 * A CSV file's non-empty lines, counted as its bytes stream past: a line of only a carriage return
 * is empty (the parser skips it too); a last line without a line break counts.
 */
export class LineCounter {
  lines = 0;
  private length = 0;
  private first = 0;

  add(bytes: Buffer) {
    let start = 0;
    for (let at = bytes.indexOf(10); at !== -1; at = bytes.indexOf(10, start)) {
      this.extend(bytes, start, at);
      if (this.length > 0 && !(this.length === 1 && this.first === 13)) this.lines++;
      this.length = 0;
      start = at + 1;
    }
    this.extend(bytes, start, bytes.length);
  }

  /** The rows after the header row, capped. */
  rows(cap: number): number {
    const lines = this.lines + (this.length > 0 ? 1 : 0);
    return Math.min(Math.max(lines - 1, 0), cap);
  }

  private extend(bytes: Buffer, start: number, end: number) {
    if (end <= start) return;
    if (this.length === 0) this.first = bytes[start];
    this.length += end - start;
  }
}

/** An upload's stream read piece by piece, its size checked against the limit. */
export class UploadReader {
  private readonly it: AsyncIterator<Buffer>;
  private readonly limit: number;
  private readonly refusal: () => Error;
  private size = 0;

  constructor(stream: Readable, limit: number, refusal: () => Error) {
    this.limit = limit;
    this.refusal = refusal;
    this.it = stream[Symbol.asyncIterator]();
  }

  async next(): Promise<Buffer | null> {
    const { value, done } = await this.it.next();
    if (done) return null;
    const bytes = Buffer.isBuffer(value) ? value : Buffer.from(value as string);
    this.size += bytes.length;
    if (this.size > this.limit) throw this.refusal();
    return bytes;
  }

  /** The start of the file: at least its first line (or 64 KiB of it), fewer bytes only when the file is shorter. */
  async head(): Promise<Buffer> {
    const parts: Buffer[] = [];
    let length = 0;
    for (;;) {
      const bytes = await this.next();
      if (!bytes) break;
      parts.push(bytes);
      length += bytes.length;
      if (length >= HEAD_BYTES || bytes.includes(10)) break;
    }
    return Buffer.concat(parts);
  }

  /** What is left of a refused upload is read and dropped, so the answer reaches the client. */
  drain() {
    // through the same iterator: the stream is read by it (resume() does nothing to such a stream)
    const drop = async () => {
      while (!(await this.it.next()).done);
    };
    drop().catch(() => {});
  }
}

/** Writes the file (its start already read, the rest from the reader) in pieces; its rows as its lines count them. */
export async function storeChunks(
  db: Db,
  importId: string,
  head: Buffer,
  reader: UploadReader,
  maxRows: number,
): Promise<number> {
  const counter = new LineCounter();
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let seq = 0;
  const write = async (piece: Buffer) => {
    await sql`insert into import_chunks (import_id, seq, data) values (${importId}, ${seq++}, ${piece})`.execute(
      db,
    );
  };
  for (let bytes: Buffer | null = head; bytes; bytes = await reader.next()) {
    counter.add(bytes);
    pending.push(bytes);
    pendingBytes += bytes.length;
    if (pendingBytes < CHUNK_BYTES) continue;
    const all = Buffer.concat(pending, pendingBytes);
    let at = 0;
    for (; all.length - at >= CHUNK_BYTES; at += CHUNK_BYTES) await write(all.subarray(at, at + CHUNK_BYTES));
    pending = at < all.length ? [all.subarray(at)] : [];
    pendingBytes = all.length - at;
  }
  if (pendingBytes > 0) await write(Buffer.concat(pending, pendingBytes));
  if (seq === 0) throw new ValidationError('The CSV file is empty');
  return counter.rows(maxRows);
}

/** The pieces of an import's file, in order, one read at a time. */
export async function* chunksOf(db: Db, importId: string): AsyncGenerator<Buffer> {
  for (let seq = 0; ; seq++) {
    const { rows } = await sql<{ data: Buffer }>`
      select data from import_chunks where import_id = ${importId} and seq = ${seq}`.execute(db);
    if (rows.length === 0) return;
    yield rows[0].data;
  }
}

/** The pieces go once the import has read them all. */
export async function dropChunks(db: Db, importId: string) {
  await sql`delete from import_chunks where import_id = ${importId}`.execute(db);
}

/** Reads a whole upload (a preview's start of a file) up to the limit. */
export async function readUpload(stream: Readable, limit: number, refusal: () => Error): Promise<Buffer> {
  const reader = new UploadReader(stream, limit, refusal);
  const parts: Buffer[] = [];
  try {
    for (let bytes = await reader.next(); bytes; bytes = await reader.next()) parts.push(bytes);
  } catch (err) {
    reader.drain();
    throw err;
  }
  return Buffer.concat(parts);
}
