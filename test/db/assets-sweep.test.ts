import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/database.ts';
import { projectShortId } from '../../src/domain/assets/store.ts';
import { sweepAssetFolder } from '../../src/domain/assets/sweep.ts';
import { createTestDatabase } from '../helpers/database.ts';

/**
 * The folder store's leftovers (domain/assets/sweep.ts, run by the hourly maintenance job) on a
 * real PostgreSQL and a real folder: files no asset names and partial writes go once an hour old;
 * an asset's image and preview stay, and so do a file written a moment ago (an upload between its
 * bytes and its row) and files that are not the store's. The uploads themselves are
 * test/http/assets.test.ts's; here the rows are written as an upload writes them.
 */

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let db: ReturnType<typeof connectDatabase>;
let root: string;

beforeAll(async () => {
  database = await createTestDatabase();
  db = connectDatabase(database.url, 2);
  root = mkdtempSync(path.join(tmpdir(), 'posthorn-assets-'));
});
afterAll(async () => {
  await db?.close();
  await database?.drop();
  rmSync(root, { recursive: true, force: true });
});

describe('the image folder sweep', () => {
  it('removes old files no asset names and old partial writes, and keeps the rest', async () => {
    const { rows } = await sql<{ id: string }>`
      with a as (insert into accounts (email, name, terms_accepted_at) values ('sweep@example.com', 'Sweep', now()) returning id),
           w as (insert into workspaces (name, owner_account_id) select 'Sweep', id from a returning id)
      insert into projects (workspace_id, name) select id, 'Sweep' from w returning id`.execute(db.db);
    const project = rows[0].id;
    const folder = path.join(root, projectShortId(project));
    mkdirSync(folder, { recursive: true });
    const name = 'KEEPKEEPKEEPKEEPKEEPKE';
    await sql`insert into assets (project_id, key, preview_key, content_type, bytes, preview_bytes, width, height)
              values (${project}, ${`${projectShortId(project)}/${name}.png`},
                      ${`${projectShortId(project)}/${name}.preview.webp`}, 'image/png', 1, 1, 1, 1)`.execute(
      db.db,
    );

    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60_000);
    const write = (file: string, old: boolean) => {
      writeFileSync(path.join(folder, file), 'x');
      if (old) utimesSync(path.join(folder, file), twoHoursAgo, twoHoursAgo);
      return file;
    };
    // the asset's own files, however old
    const kept = [write(`${name}.png`, true), write(`${name}.preview.webp`, true)];
    const orphan = write('AAAAAAAAAAAAAAAAAAAAAA.png', true);
    const orphanPreview = write('AAAAAAAAAAAAAAAAAAAAAA.preview.webp', true);
    const partial = write('BBBBBBBBBBBBBBBBBBBBBB.png.0123456789ab.partial', true);
    const fresh = write('CCCCCCCCCCCCCCCCCCCCCC.png', false);
    const foreign = write('notes.txt', true);

    expect(await sweepAssetFolder(db.db, { folder: root, s3: null })).toBe(3);
    expect(readdirSync(folder).sort()).toEqual([...kept, fresh, foreign].sort());
    for (const gone of [orphan, orphanPreview, partial])
      expect(existsSync(path.join(folder, gone))).toBe(false);
    // nothing more to do
    expect(await sweepAssetFolder(db.db, { folder: root, s3: null })).toBe(0);
  });
});
