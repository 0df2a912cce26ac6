import { gunzipSync, inflateRawSync } from 'node:zlib';
import { REPORT_BYTES_PER_MESSAGE, REPORT_FILES_PER_MESSAGE } from './limits.ts';

/**
 * Report attachments as reporters send them: plain, gzip (RFC 7489 §7.2.1.1 names `.gz`) or zip
 * (which Google and many others send). Opened by their bytes, whatever their name or media type
 * claims. What comes out is counted against one budget per message (limits.ts), byte by byte as
 * it is produced, never by what a zip declares; a zip whose entries share or overlap their data (a
 * zip bomb: 30 entries of one member) is refused before anything is inflated. The inflating itself
 * runs in the report thread (read.ts), never on the event loop.
 */

export class UnpackError extends Error {}

/** The message's budget is spent: nothing more of it is read. */
export class OverBudget extends UnpackError {}

/** What one message's reports may still decompress to, and how many files they may still be. */
export class Budget {
  bytes: number;
  files: number;
  constructor(bytes = REPORT_BYTES_PER_MESSAGE, files = REPORT_FILES_PER_MESSAGE) {
    this.bytes = bytes;
    this.files = files;
  }

  static readonly overBytes =
    `the reports decompress to more than ${REPORT_BYTES_PER_MESSAGE / 1024 / 1024} MB in all (the limit of one message)`;

  /** Counts a file that came out: its bytes and one file. */
  take(content: Buffer): Buffer {
    if (content.length > this.bytes) throw new OverBudget(Budget.overBytes);
    if (this.files < 1)
      throw new OverBudget(`the message holds more than ${REPORT_FILES_PER_MESSAGE} report files`);
    this.bytes -= content.length;
    this.files -= 1;
    return content;
  }

  /** Decompresses within what is left: past it, OverBudget (zlib stops as the output passes it). */
  inflate(inflate: () => Buffer, what: string): Buffer {
    if (this.bytes < 1) throw new OverBudget(Budget.overBytes);
    try {
      return this.take(inflate());
    } catch (err) {
      if (err instanceof UnpackError) throw err;
      if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw new OverBudget(Budget.overBytes);
      throw new UnpackError(`${what}: ${(err as Error).message}`);
    }
  }
}

const isGzip = (b: Buffer) => b.length > 2 && b[0] === 0x1f && b[1] === 0x8b;
const isZip = (b: Buffer) => b.length > 4 && b.readUInt32LE(0) === 0x04034b50;

function withoutTrailingSpace(bytes: Buffer): Buffer {
  let end = bytes.length;
  while (end > 0 && [0x0d, 0x0a, 0x20, 0x09].includes(bytes[end - 1])) end--;
  return bytes.subarray(0, end);
}

function gunzip(bytes: Buffer, budget: Budget): Buffer {
  const read = (data: Buffer) =>
    budget.inflate(
      () => gunzipSync(data, { maxOutputLength: budget.bytes }),
      'the gzip data could not be read',
    );
  try {
    return read(bytes);
  } catch (err) {
    // some reporters (Mimecast) end the gzip data with a line break, which is not a second member
    const trimmed = withoutTrailingSpace(bytes);
    if (err instanceof OverBudget || trimmed.length === bytes.length) throw err;
    try {
      return read(trimmed);
    } catch (again) {
      if (again instanceof OverBudget) throw again;
      throw err; // the first error says more
    }
  }
}

/** The files inside: one for plain and gzip, each stored file for a zip. */
export function unpack(bytes: Buffer, budget = new Budget()): { name: string | null; content: Buffer }[] {
  if (isGzip(bytes)) return [{ name: null, content: gunzip(bytes, budget) }];
  if (isZip(bytes)) return unzip(bytes, budget);
  return [{ name: null, content: budget.take(bytes) }];
}

/** The end of central directory record: searched from the end (a comment may follow it). */
function endOfDirectory(zip: Buffer): number {
  for (let at = zip.length - 22; at >= Math.max(0, zip.length - 22 - 65_535); at--)
    if (zip.readUInt32LE(at) === 0x06054b50) return at;
  throw new UnpackError('not a complete zip file (no end of central directory)');
}

interface ZipEntry {
  name: string;
  method: number;
  /** Where its local header starts, and where its compressed data starts and ends. */
  local: number;
  start: number;
  end: number;
}

/** The zip's file entries, read through its central directory, each checked to lie in the zip. */
function entriesOf(zip: Buffer): ZipEntry[] {
  const end = endOfDirectory(zip);
  const count = zip.readUInt16LE(end + 10);
  if (count > REPORT_FILES_PER_MESSAGE)
    throw new UnpackError(`the zip holds ${count} entries, more than ${REPORT_FILES_PER_MESSAGE}`);
  let at = zip.readUInt32LE(end + 16);
  const entries: ZipEntry[] = [];
  for (let i = 0; i < count; i++) {
    if (at + 46 > zip.length || zip.readUInt32LE(at) !== 0x02014b50)
      throw new UnpackError('the zip central directory is damaged');
    const method = zip.readUInt16LE(at + 10);
    const compressed = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const local = zip.readUInt32LE(at + 42);
    const name = zip.subarray(at + 46, at + 46 + nameLength).toString('utf8');
    at += 46 + nameLength + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
    if (name.endsWith('/')) continue;
    if (local + 30 > zip.length || zip.readUInt32LE(local) !== 0x04034b50)
      throw new UnpackError(`the zip entry ${name} is damaged`);
    const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    if (start + compressed > end) throw new UnpackError(`the zip entry ${name} is damaged`);
    entries.push({ name, method, local, start, end: start + compressed });
  }
  return entries;
}

/**
 * Entries that share their data or overlap: a zip's members each have their own bytes, so a
 * directory naming one member many times (a zip bomb's trick) is refused whole.
 */
function refuseOverlaps(entries: ZipEntry[]) {
  const sorted = [...entries].sort((a, b) => a.local - b.local);
  for (let i = 1; i < sorted.length; i++)
    if (sorted[i].local < sorted[i - 1].end)
      throw new UnpackError(
        `the zip entries ${sorted[i - 1].name} and ${sorted[i].name} overlap (a zip bomb's directory): refused`,
      );
}

/** The files of a zip (stored or deflated; others refused). */
function unzip(zip: Buffer, budget: Budget) {
  const entries = entriesOf(zip);
  refuseOverlaps(entries);
  const files: { name: string; content: Buffer }[] = [];
  for (const { name, method, start, end } of entries) {
    const data = zip.subarray(start, end);
    if (method === 0) files.push({ name, content: budget.take(Buffer.from(data)) });
    else if (method === 8)
      files.push({
        name,
        content: budget.inflate(
          () => inflateRawSync(data, { maxOutputLength: budget.bytes }),
          `the zip entry ${name} could not be inflated`,
        ),
      });
    else
      throw new UnpackError(`the zip entry ${name} uses compression method ${method}, not stored or deflate`);
  }
  if (files.length === 0) throw new UnpackError('the zip holds no file');
  return files;
}
