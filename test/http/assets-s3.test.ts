import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import S3rver from '@20minutes/s3rver';
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type AssetServer, fetchServed, png, startAssetServer, uploadImage } from '../helpers/assets.ts';

/**
 * Images in Posthorn (issue 49, build item 2) on an S3-compatible store: a local S3 server from
 * npm (@20minutes/s3rver on 127.0.0.1) holds the bucket. The image and its preview land in the
 * bucket (under the configured prefix), not in the data directory; Posthorn serves them at
 * {public_url}/assets/… as with the folder store, still after a restart, and a delete removes both
 * objects.
 */

const BUCKET = 'posthorn-assets';
const CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
let s3: S3rver;
let s3Dir: string;
let endpoint: string;
let server: AssetServer;
let key: string;

/** Which of the keys the bucket holds, asked of the S3 server directly. */
const inBucket = async (keys: string[]) => {
  const client = new S3Client({
    region: 'us-east-1',
    endpoint,
    forcePathStyle: true,
    credentials: CREDENTIALS,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const held = await Promise.all(
    keys.map((k) =>
      client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: k })).then(
        () => true,
        (err) => {
          if (err.$metadata?.httpStatusCode === 404) return false;
          throw err;
        },
      ),
    ),
  );
  client.destroy();
  return keys.filter((_k, i) => held[i]);
};

beforeAll(async () => {
  s3Dir = mkdtempSync(path.join(tmpdir(), 'posthorn-s3rver-'));
  s3 = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: s3Dir,
    configureBuckets: [{ name: BUCKET }],
  });
  const { port } = await s3.run();
  endpoint = `http://127.0.0.1:${port}`;
  server = await startAssetServer({
    POSTHORN_ASSETS_S3_BUCKET: BUCKET,
    POSTHORN_ASSETS_S3_ENDPOINT: endpoint,
    POSTHORN_ASSETS_S3_REGION: 'us-east-1',
    POSTHORN_ASSETS_S3_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
    POSTHORN_ASSETS_S3_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
    POSTHORN_ASSETS_S3_PREFIX: 'mail/',
  });
  key = (await server.first.signupConfirmed()).project_key.key;
});
afterAll(async () => {
  await server?.close();
  await s3?.close();
  if (s3Dir) rmSync(s3Dir, { recursive: true, force: true });
});

it('stores images in the S3 bucket, serves them at /assets/… across a restart, and deletes them there', async () => {
  const image = await png(640, 480);
  const up = await uploadImage(server.url, key, image, 'banner.png');
  expect(up.status, JSON.stringify(up.body)).toBe(200);
  const asset = up.body;
  const keyOf = (url: string) => `mail/${new URL(url).pathname.slice('/assets/'.length)}`;
  const objects = [keyOf(asset.url), keyOf(asset.preview_url)];
  expect(await inBucket(objects)).toEqual(objects);
  expect(existsSync(path.join(server.dataDir, 'assets'))).toBe(false);

  const served = await fetchServed(server.url, asset.url);
  expect(served.status).toBe(200);
  expect(served.body.equals(image)).toBe(true);
  expect(served.headers.get('content-type')).toBe('image/png');
  expect(served.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');

  await server.restart();
  const again = await fetchServed(server.url, asset.url);
  expect(again.status).toBe(200);
  expect(again.body.equals(image)).toBe(true);
  expect((await fetchServed(server.url, asset.preview_url)).headers.get('content-type')).toBe('image/webp');

  const gone = await fetch(`${server.url}/v1/assets/${asset.id}`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${key}` },
  });
  expect(gone.status).toBe(204);
  expect(await inBucket(objects)).toEqual([]);
  expect((await fetchServed(server.url, asset.url)).status).toBe(404);
});
