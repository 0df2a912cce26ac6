import { existsSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepAssetFolder } from '../../src/domain/assets/sweep.ts';
import { fetchServed, png, uploadImage } from '../helpers/assets.ts';
import { signupConfirmedInDatabase, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The folder store's leftovers (domain/assets/sweep.ts, run by the hourly maintenance job): files
 * no asset names and partial writes go once an hour old; an asset's image and preview stay, and
 * so do a file written a moment ago (an upload between its bytes and its row) and files that are
 * not the store's.
 */

let server: TestServer;
let dataDir: string;
let key: string;

beforeAll(async () => {
  // the API alone: the sweep is called here as the maintenance job calls it
  dataDir = mkdtempSync(path.join(tmpdir(), 'posthorn-assets-'));
  server = await startTestServer({ POSTHORN_DATA_DIR: dataDir }, ['api']);
  key = (await signupConfirmedInDatabase(server)).project_key.key;
}, 60_000);
afterAll(async () => {
  await server?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the image folder sweep', () => {
  it('removes old files no asset names and old partial writes, and keeps the rest', async () => {
    const uploaded = await uploadImage(server.url, key, await png(40, 30));
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
    const root = path.join(dataDir, 'assets');
    const [project] = readdirSync(root);
    const folder = path.join(root, project);
    const kept = readdirSync(folder);
    expect(kept).toHaveLength(2);

    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60_000);
    const write = (name: string, old: boolean) => {
      writeFileSync(path.join(folder, name), 'x');
      if (old) utimesSync(path.join(folder, name), twoHoursAgo, twoHoursAgo);
      return name;
    };
    const orphan = write('AAAAAAAAAAAAAAAAAAAAAA.png', true);
    const orphanPreview = write('AAAAAAAAAAAAAAAAAAAAAA.preview.webp', true);
    const partial = write('BBBBBBBBBBBBBBBBBBBBBB.png.0123456789ab.partial', true);
    const fresh = write('CCCCCCCCCCCCCCCCCCCCCC.png', false);
    const foreign = write('notes.txt', true);
    // the asset's own files, however old
    for (const name of kept) utimesSync(path.join(folder, name), twoHoursAgo, twoHoursAgo);

    const removed = await sweepAssetFolder(server.runtime.ctx.db, server.runtime.ctx.config.assets);
    expect(removed).toBe(3);
    const left = readdirSync(folder).sort();
    expect(left).toEqual([...kept, fresh, foreign].sort());
    for (const gone of [orphan, orphanPreview, partial])
      expect(existsSync(path.join(folder, gone))).toBe(false);
    // the asset still serves
    expect((await fetchServed(server.url, uploaded.body.url)).status).toBe(200);
  });
});
