import sharp, { type Metadata } from 'sharp';
import { ValidationError } from '../core/errors.ts';
import type { ImageExtension } from './store.ts';

/**
 * What an uploaded file is, judged by its first bytes and never by the name or type the client
 * gave: PNG, JPEG, GIF or WebP, which every mail client shows. SVG is refused (it can carry
 * scripts, and most mail clients do not show it); anything else is not an image we take.
 */

/** The side of the box a preview fits in, in pixels. */
export const PREVIEW_SIZE = 400;
/** Larger images are refused before they are decoded (a small file can unpack to gigabytes). */
export const MAX_PIXELS = 25_000_000;

const startsWith = (data: Buffer, bytes: number[], at = 0) => bytes.every((b, i) => data[at + i] === b);
const ascii = (text: string) => [...text].map((c) => c.charCodeAt(0));

/** The image format of a file's first bytes, or null. */
export function sniffImage(data: Buffer): ImageExtension | null {
  if (startsWith(data, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png';
  if (startsWith(data, [0xff, 0xd8, 0xff])) return 'jpg';
  if (startsWith(data, ascii('GIF87a')) || startsWith(data, ascii('GIF89a'))) return 'gif';
  if (startsWith(data, ascii('RIFF')) && startsWith(data, ascii('WEBP'), 8)) return 'webp';
  return null;
}

/** Whether a file looks like SVG (XML text with an <svg> element), whatever it was called. */
function looksLikeSvg(data: Buffer, name: string, claimed: string): boolean {
  const head = data
    .subarray(0, 4096)
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .trimStart();
  return (
    /<svg[\s>]/i.test(head) || (head.startsWith('<') && (/\.svgz?$/i.test(name) || claimed.includes('svg')))
  );
}

function refuseSvg(data: Buffer): never {
  const text = data.toString('utf8');
  const scripted = /<script[\s>]|\son[a-z]+\s*=|javascript:/i.test(text);
  throw new ValidationError(
    `SVG images are not accepted${scripted ? ': this one holds a script, and an SVG can run code in whoever opens it' : ' (an SVG can hold scripts, and most mail clients do not show SVG)'}. Export it as PNG (or JPEG) and upload that`,
  );
}

/** A size for people: KB under a megabyte, MB with one decimal above. */
export const sizeText = (n: number) =>
  n < 1024 * 1024 ? `${Math.ceil(n / 1024)} KB` : `${(n / 1024 / 1024).toFixed(1).replace(/\.0$/, '')} MB`;

/** The refusal of a file over the size limit (413), with both sizes. */
export function tooLargeImage(size: number | null, maxBytes: number): Error {
  const what = size === null ? 'The upload is larger than' : `The image is ${sizeText(size)}: over`;
  return Object.assign(
    new Error(
      `${what} the ${sizeText(maxBytes)} limit for images. Make it smaller (resize it, or save it as JPEG) and upload it again`,
    ),
    { statusCode: 413 },
  );
}

export interface CheckedImage {
  ext: ImageExtension;
  width: number;
  height: number;
  /** The resized preview (WebP, within PREVIEW_SIZE × PREVIEW_SIZE, never enlarged). */
  preview: Buffer;
}

/**
 * Checks an uploaded file and makes its preview: it must be a PNG, JPEG, GIF or WebP (by its
 * bytes), within the size limit, decodable and at most MAX_PIXELS in area. 400 or 413 otherwise.
 */
export async function checkImage(
  data: Buffer,
  { name, claimed, maxBytes }: { name: string; claimed: string; maxBytes: number },
): Promise<CheckedImage> {
  if (data.length === 0)
    throw new ValidationError('The file is empty: choose a PNG, JPEG, GIF or WebP image');
  if (data.length > maxBytes) throw tooLargeImage(data.length, maxBytes);
  const ext = sniffImage(data);
  if (!ext) {
    if (looksLikeSvg(data, name, claimed)) refuseSvg(data);
    throw new ValidationError(
      `${name ? `"${name}"` : 'The file'} is not a PNG, JPEG, GIF or WebP image (judged by its contents, not its name): only those are accepted`,
    );
  }
  const image = () => sharp(data, { limitInputPixels: MAX_PIXELS, failOn: 'error' });
  let meta: Metadata;
  try {
    // the header only: the pixel limit is checked below, with a message that says so
    meta = await sharp(data, { limitInputPixels: false }).metadata();
  } catch {
    throw new ValidationError(
      `The file starts as a${ext === 'jpg' ? ' JPEG' : ` ${ext.toUpperCase()}`} image but cannot be read as one: it may be cut short or damaged`,
    );
  }
  const width = meta.width ?? 0;
  const height = meta.height ?? 0;
  if (width * height > MAX_PIXELS)
    throw new ValidationError(
      `The image is ${width}×${height} pixels: at most ${MAX_PIXELS / 1_000_000} megapixels are accepted. Resize it first`,
    );
  try {
    const preview = await image()
      .rotate()
      .resize({ width: PREVIEW_SIZE, height: PREVIEW_SIZE, fit: 'inside', withoutEnlargement: true })
      .webp({ quality: 80 })
      .toBuffer();
    return { ext, width, height, preview };
  } catch {
    throw new ValidationError('The image cannot be decoded: it may be cut short or damaged');
  }
}
