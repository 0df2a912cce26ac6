import type { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { S3AssetsConfig } from './config.ts';
import type { AssetStore, StoredObject } from './store.ts';

const CACHE_CONTROL = 'public, max-age=31536000, immutable';

const missing = (err: unknown): boolean => {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
};

/**
 * Images in an S3-compatible bucket (Amazon S3, MinIO, R2, Spaces…). Posthorn still serves them
 * at {public_url}/assets/, reading the object from the bucket, so the bucket need not be public.
 */
export class S3Store implements AssetStore {
  readonly kind = 's3' as const;
  private readonly client: S3Client;
  private readonly config: S3AssetsConfig;

  constructor(config: S3AssetsConfig) {
    this.config = config;
    this.client = new S3Client({
      region: config.region,
      endpoint: config.endpoint,
      forcePathStyle: config.forcePathStyle,
      credentials: config.credentials,
      // images are written whole: the checksum the SDK adds by default is not understood by every
      // S3-compatible server, and the transport already checks what it carries
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  private key(key: string): string {
    return `${this.config.prefix}${key}`;
  }

  async put(key: string, body: Buffer, contentType: string): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.config.bucket,
        Key: this.key(key),
        Body: body,
        ContentType: contentType,
        ContentLength: body.length,
        CacheControl: CACHE_CONTROL,
      }),
    );
  }

  async get(key: string): Promise<StoredObject | null> {
    try {
      const object = await this.client.send(
        new GetObjectCommand({ Bucket: this.config.bucket, Key: this.key(key) }),
      );
      if (!object.Body) return null;
      return { body: object.Body as Readable, bytes: Number(object.ContentLength ?? 0) };
    } catch (err) {
      if (missing(err)) return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.config.bucket, Key: this.key(key) }));
    } catch (err) {
      if (!missing(err)) throw err;
    }
  }
}
