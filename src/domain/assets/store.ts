import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { AssetsConfig } from './config.ts';
import { S3Store } from './s3-store.ts';

/** One stored object as it is served: its bytes as a stream and their length. */
export interface StoredObject {
  body: Readable;
  bytes: number;
}

/**
 * Where images live: a folder (the default) or an S3-compatible bucket. Keys are made by
 * assetKey below (`<project short id>/<random>.<ext>`) and checked by isAssetKey before any
 * read, so a key never leaves the store's root.
 */
export interface AssetStore {
  readonly kind: 'folder' | 's3';
  put(key: string, body: Buffer, contentType: string): Promise<void>;
  /** The object, or null when the store has none under that key. */
  get(key: string): Promise<StoredObject | null>;
  /** Removes the object; one already gone is no error. */
  delete(key: string): Promise<void>;
}

export const CONTENT_TYPES = {
  png: 'image/png',
  jpg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
} as const;
export type ImageExtension = keyof typeof CONTENT_TYPES;

const KEY = /^[0-9a-f]{12}\/[A-Za-z0-9_-]{22}(\.preview)?\.(png|jpg|gif|webp)$/;

/** Whether a key has the shape assetKey makes (anything else is not ours: a 404). */
export const isAssetKey = (key: string): boolean => KEY.test(key);

/** A project's short id in asset paths: the first 12 hex digits of its id. */
export const projectShortId = (projectId: string): string => projectId.replace(/-/g, '').slice(0, 12);

/** A new image's key and its preview's: unguessable (128 random bits) under the project's short id. */
export function assetKeys(projectId: string, ext: ImageExtension): { key: string; previewKey: string } {
  const name = `${projectShortId(projectId)}/${randomBytes(16).toString('base64url')}`;
  return { key: `${name}.${ext}`, previewKey: `${name}.preview.webp` };
}

/** The content type of a stored key, from its extension. */
export function contentTypeOf(key: string): string {
  return CONTENT_TYPES[key.slice(key.lastIndexOf('.') + 1) as ImageExtension] ?? 'application/octet-stream';
}

/** Images as files under one folder (`POSTHORN_DATA_DIR/assets` by default), written whole then renamed into place. */
export class FolderStore implements AssetStore {
  readonly kind = 'folder' as const;
  private readonly root: string;
  constructor(root: string) {
    this.root = root;
  }

  private file(key: string): string {
    if (!isAssetKey(key)) throw new Error(`Not an asset key: ${key}`);
    return path.join(this.root, ...key.split('/'));
  }

  async put(key: string, body: Buffer): Promise<void> {
    const file = this.file(key);
    await mkdir(path.dirname(file), { recursive: true });
    const partial = `${file}.${randomBytes(6).toString('hex')}.partial`;
    await writeFile(partial, body, { mode: 0o644 });
    await rename(partial, file);
  }

  async get(key: string): Promise<StoredObject | null> {
    const file = this.file(key);
    const info = await stat(file).catch(() => null);
    if (!info?.isFile()) return null;
    return { body: createReadStream(file), bytes: info.size };
  }

  async delete(key: string): Promise<void> {
    await rm(this.file(key), { force: true });
  }
}

const stores = new WeakMap<AssetsConfig, AssetStore>();

/** The store the operator chose: S3 once a bucket is named, the folder otherwise (one per configuration). */
export function assetStore(config: AssetsConfig): AssetStore {
  let store = stores.get(config);
  if (!store) {
    store = config.s3 ? new S3Store(config.s3) : new FolderStore(config.folder);
    stores.set(config, store);
  }
  return store;
}
