import path from 'node:path';
import { ConfigError } from '../../config-values.ts';

/**
 * Where a project's images are kept (issue 49, build item 2) and the limits on them: a folder
 * under the data directory by default, or an S3-compatible bucket once POSTHORN_ASSETS_S3_BUCKET
 * is set. README.md's configuration table lists every setting.
 */
export interface AssetsConfig {
  /** POSTHORN_ASSETS_MAX_BYTES: the largest image accepted (default 5 MB). */
  maxBytes: number;
  /** POSTHORN_ASSETS_QUOTA_BYTES: what one project's images (originals and previews) may take; 0 = no quota. */
  quotaBytes: number;
  /** The folder store's root: `POSTHORN_DATA_DIR/assets`, or POSTHORN_ASSETS_DIR. */
  folder: string;
  /** The S3-compatible store, when a bucket is named. */
  s3: S3AssetsConfig | null;
}

export interface S3AssetsConfig {
  bucket: string;
  /** An S3-compatible server's URL (MinIO, R2, Spaces…); unset = Amazon S3 of the region. */
  endpoint: string | undefined;
  region: string;
  /** Unset = the AWS SDK's usual chain (environment, profile, instance role). */
  credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
  /** Bucket in the path (`endpoint/bucket/key`) rather than the host name: most self-hosted servers want it. */
  forcePathStyle: boolean;
  /** Put before every key (say `posthorn/`), to share a bucket. */
  prefix: string;
}

type Env = Record<string, string | undefined>;

const MB = 1024 * 1024;

function bytes(env: Env, name: string, fallback: number, min: number): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || !Number.isSafeInteger(Number(raw)))
    throw new ConfigError(`${name} must be a whole number of bytes of at least ${min}, got "${raw}"`);
  return Number(raw);
}

function pathStyle(env: Env, name: string, fallback: boolean): boolean {
  const raw = (env[name] ?? '').trim().toLowerCase();
  if (raw === '') return fallback;
  if (['1', 'true', 'yes'].includes(raw)) return true;
  if (['0', 'false', 'no'].includes(raw)) return false;
  throw new ConfigError(`${name} must be 1 or 0 (true or false), got "${env[name]}"`);
}

function s3Config(env: Env): S3AssetsConfig | null {
  const bucket = env.POSTHORN_ASSETS_S3_BUCKET?.trim();
  if (!bucket) return null;
  const endpoint = env.POSTHORN_ASSETS_S3_ENDPOINT?.trim() || undefined;
  if (endpoint && !/^https?:\/\/[^/]/.test(endpoint))
    throw new ConfigError(`POSTHORN_ASSETS_S3_ENDPOINT must be an http(s) URL, got "${endpoint}"`);
  const accessKeyId = env.POSTHORN_ASSETS_S3_ACCESS_KEY_ID?.trim();
  const secretAccessKey = env.POSTHORN_ASSETS_S3_SECRET_ACCESS_KEY?.trim();
  if (Boolean(accessKeyId) !== Boolean(secretAccessKey))
    throw new ConfigError(
      'POSTHORN_ASSETS_S3_ACCESS_KEY_ID and POSTHORN_ASSETS_S3_SECRET_ACCESS_KEY go together: set both, or neither for the AWS SDK’s usual credentials',
    );
  const prefix = (env.POSTHORN_ASSETS_S3_PREFIX ?? '').trim().replace(/^\/+/, '');
  return {
    bucket,
    endpoint,
    region: env.POSTHORN_ASSETS_S3_REGION?.trim() || 'us-east-1',
    credentials: accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : undefined,
    forcePathStyle: pathStyle(env, 'POSTHORN_ASSETS_S3_PATH_STYLE', endpoint !== undefined),
    prefix: prefix && !prefix.endsWith('/') ? `${prefix}/` : prefix,
  };
}

/** The assets settings from the environment (loadConfig calls it). */
export function assetsConfig(env: Env, dataDir: string): AssetsConfig {
  return {
    maxBytes: bytes(env, 'POSTHORN_ASSETS_MAX_BYTES', 5 * MB, 1024),
    quotaBytes: bytes(env, 'POSTHORN_ASSETS_QUOTA_BYTES', 500 * MB, 0),
    folder: path.resolve(env.POSTHORN_ASSETS_DIR?.trim() || path.join(dataDir, 'assets')),
    s3: s3Config(env),
  };
}
