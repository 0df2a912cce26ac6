import { gunzipSync, inflateRawSync } from 'node:zlib';

/**
 * Report attachments as reporters send them: plain, gzip (RFC 7489 §7.2.1.1 names `.gz`) or zip
 * (which Google and many others send). Opened by their bytes, whatever their name or media type
 * claims. Sizes are bounded: a report is a few megabytes at most, a zip bomb is refused.
 */

/** What a report may grow to once decompressed. */
export const MAX_REPORT_BYTES = 50 * 1024 * 1024;

export class UnpackError extends Error {}

const isGzip = (b: Buffer) => b.length > 2 && b[0] === 0x1f && b[1] === 0x8b;
const isZip = (b: Buffer) => b.length > 4 && b.readUInt32LE(0) === 0x04034b50;

function withoutTrailingSpace(bytes: Buffer): Buffer {
  let end = bytes.length;
  while (end > 0 && [0x0d, 0x0a, 0x20, 0x09].includes(bytes[end - 1])) end--;
  return bytes.subarray(0, end);
}

/** The files inside: one for plain and gzip, each stored file for a zip. */
export function unpack(bytes: Buffer, limit = MAX_REPORT_BYTES): { name: string | null; content: Buffer }[] {
  if (isGzip(bytes)) {
    try {
      return [{ name: null, content: gunzipSync(bytes, { maxOutputLength: limit }) }];
    } catch (err) {
      // some reporters (Mimecast) end the gzip data with a line break, which is not a second member
      const trimmed = withoutTrailingSpace(bytes);
      if (trimmed.length < bytes.length)
        try {
          return [{ name: null, content: gunzipSync(trimmed, { maxOutputLength: limit }) }];
        } catch {
          // the first error says more
        }
      throw new UnpackError(`the gzip data could not be read: ${(err as Error).message}`);
    }
  }
  if (isZip(bytes)) return unzip(bytes, limit);
  return [{ name: null, content: bytes }];
}

/** The end of central directory record: searched from the end (a comment may follow it). */
function endOfDirectory(zip: Buffer): number {
  for (let at = zip.length - 22; at >= Math.max(0, zip.length - 22 - 65_535); at--)
    if (zip.readUInt32LE(at) === 0x06054b50) return at;
  throw new UnpackError('not a complete zip file (no end of central directory)');
}

/** The files of a zip, read through its central directory (stored or deflated; others refused). */
function unzip(zip: Buffer, limit: number) {
  const end = endOfDirectory(zip);
  const entries = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  const files: { name: string; content: Buffer }[] = [];
  let total = 0;
  for (let i = 0; i < entries; i++) {
    if (at + 46 > zip.length || zip.readUInt32LE(at) !== 0x02014b50)
      throw new UnpackError('the zip central directory is damaged');
    const method = zip.readUInt16LE(at + 10);
    const compressed = zip.readUInt32LE(at + 20);
    const size = zip.readUInt32LE(at + 24);
    const nameLength = zip.readUInt16LE(at + 28);
    const extra = zip.readUInt16LE(at + 30);
    const comment = zip.readUInt16LE(at + 32);
    const local = zip.readUInt32LE(at + 42);
    const name = zip.subarray(at + 46, at + 46 + nameLength).toString('utf8');
    at += 46 + nameLength + extra + comment;
    if (name.endsWith('/')) continue;
    total += size;
    if (total > limit) throw new UnpackError(`the zip holds more than ${limit} bytes`);
    if (local + 30 > zip.length || zip.readUInt32LE(local) !== 0x04034b50)
      throw new UnpackError(`the zip entry ${name} is damaged`);
    const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const data = zip.subarray(start, start + compressed);
    if (method === 0) files.push({ name, content: Buffer.from(data) });
    else if (method === 8) {
      try {
        files.push({ name, content: inflateRawSync(data, { maxOutputLength: limit }) });
      } catch (err) {
        throw new UnpackError(`the zip entry ${name} could not be inflated: ${(err as Error).message}`);
      }
    } else
      throw new UnpackError(`the zip entry ${name} uses compression method ${method}, not stored or deflate`);
  }
  if (files.length === 0) throw new UnpackError('the zip holds no file');
  return files;
}
