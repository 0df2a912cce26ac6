import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { loadConfig } from '../../src/config.ts';
import { type Runtime, startRuntime } from '../../src/runtime.ts';
import { startTestServer, type TestServer } from './server.ts';

/**
 * Helpers of the assets tests (issue 49, build item 2): images made on the spot, uploads as a
 * browser sends them (multipart/form-data), and a server that can be stopped and started again
 * on the same database and data directory.
 */

/** A PNG of one colour (small), or of random pixels (about 3 bytes a pixel: no compression helps). */
export async function png(width: number, height: number, noise = false): Promise<Buffer> {
  if (!noise)
    return sharp({ create: { width, height, channels: 3, background: '#3366cc' } })
      .png()
      .toBuffer();
  const pixels = Buffer.alloc(width * height * 3);
  for (let i = 0; i < pixels.length; i++) pixels[i] = Math.floor(Math.random() * 256);
  return sharp(pixels, { raw: { width, height, channels: 3 } })
    .png({ compressionLevel: 0 })
    .toBuffer();
}

export interface AssetServer {
  /** The server running now (a new one after restart). */
  url: string;
  first: TestServer;
  /** The data directory both starts share (the folder store is its `assets/`). */
  dataDir: string;
  /** Stops the server and starts a new one (the API) on the same database and data directory. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** A test server whose data directory is the test's own, so a second start finds what the first stored. */
export async function startAssetServer(env: Record<string, string>): Promise<AssetServer> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'posthorn-assets-'));
  const first = await startTestServer({ ...env, POSTHORN_DATA_DIR: dataDir });
  let second: Runtime | null = null;
  const server: AssetServer = {
    url: first.url,
    first,
    dataDir,
    async restart() {
      await first.runtime.stop();
      second = await startRuntime(
        loadConfig({
          DATABASE_URL: first.databaseUrl,
          POSTHORN_DATA_DIR: dataDir,
          PORT: '0',
          POSTHORN_SMTP_RELAY: first.sink.url,
          POSTHORN_RATE_LIMIT: '0',
          LOG_LEVEL: 'warn',
          ...env,
        }),
        ['api'],
      );
      server.url = second.url as string;
    },
    async close() {
      await second?.stop();
      await first.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return server;
}

/** POST /v1/assets with the file in a form's `file` field, as the dashboard sends it. */
export async function uploadImage(
  url: string,
  key: string,
  data: Buffer,
  filename = 'image.png',
  type = 'image/png',
): Promise<{ status: number; body: any }> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(data)], { type }), filename);
  const res = await fetch(`${url}/v1/assets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: form,
  });
  return { status: res.status, body: await res.json() };
}

/** The image at an asset's address, fetched from the server running now (public URLs name port 0 in tests). */
export async function fetchServed(url: string, assetUrl: string) {
  const res = await fetch(`${url}${new URL(assetUrl).pathname}`);
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}
