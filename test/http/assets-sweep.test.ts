import { existsSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepAssetFolder } from '../../src/domain/assets/sweep.ts';
import { type AssetServer, png, startAssetServer, uploadImage } from '../helpers/assets.ts';

/**
 * The folder store's leftovers (domain/assets/sweep.ts, run by the hourly maintenance job): files
 * no asset names and partial writes go once an hour old; an asset's image and preview stay, and
 * so do a file written a moment ago (an upload between its bytes and its row) and files that are
 * not the store's.
 */

let server: AssetServer;
let key: string;

beforeAll(async () => {
  server = await startAssetServer({});
  key = (await server.first.signupConfirmed()).project_key.key;
}, 60_000);
afterAll(async () => {
  await server?.close();
});

describe('the image folder sweep', () => {
  it('removes old files no asset names and old partial writes, and keeps the rest', async () => {
    const uploaded = await uploadImage(server.url, key, await png(40, 30));
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
    const root = path.join(server.dataDir, 'assets');
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

    const removed = await sweepAssetFolder(
      server.first.runtime.ctx.db,
      server.first.runtime.ctx.config.assets,
    );
    expect(removed).toBe(3);
    const left = readdirSync(folder).sort();
    expect(left).toEqual([...kept, fresh, foreign].sort());
    for (const gone of [orphan, orphanPreview, partial])
      expect(existsSync(path.join(folder, gone))).toBe(false);
    // the asset still serves
    const served = await fetch(`${server.url}${new URL(uploaded.body.url).pathname}`);
    expect(served.status).toBe(200);
  });
});
