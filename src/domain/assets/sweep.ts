import { readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { AssetsConfig } from './config.ts';
import { isAssetKey } from './store.ts';

/**
 * Files the folder store keeps that nothing names: an upload cut off between its bytes and its
 * row (a crash, a quota refusal whose clean-up failed), a delete whose file removal failed, and
 * partial writes left by a crash. Only files older than `graceMs` go, so an upload in progress
 * (bytes first, then its row) is never taken for one; files that are not the store's (another
 * name) are left alone. The S3 store is not swept: a bucket's lifecycle rules do that there.
 * Returns how many files it removed.
 */
export async function sweepAssetFolder(
  db: Db,
  config: Pick<AssetsConfig, 'folder' | 's3'>,
  { graceMs = 60 * 60_000, now = Date.now() }: { graceMs?: number; now?: number } = {},
): Promise<number> {
  if (config.s3) return 0;
  const root = config.folder;
  const projects = await readdir(root).catch(() => [] as string[]);
  let removed = 0;
  for (const project of projects.filter((name) => /^[0-9a-f]{12}$/.test(name))) {
    const folder = path.join(root, project);
    const names = await readdir(folder).catch(() => [] as string[]);
    const old: { name: string; key: string | null }[] = [];
    for (const name of names) {
      const key = `${project}/${name}`;
      const partial = /\.[0-9a-f]{12}\.partial$/.test(name);
      if (!partial && !isAssetKey(key)) continue;
      const info = await stat(path.join(folder, name)).catch(() => null);
      if (info?.isFile() && info.mtimeMs < now - graceMs) old.push({ name, key: partial ? null : key });
    }
    const keys = old.flatMap((f) => (f.key ? [f.key] : []));
    const { rows } =
      keys.length === 0
        ? { rows: [] }
        : await sql<{ key: string }>`
            select key from assets where key = any(${keys}::text[])
            union all
            select preview_key from assets where preview_key = any(${keys}::text[])`.execute(db);
    const named = new Set(rows.map((r) => r.key));
    for (const file of old) {
      if (file.key && named.has(file.key)) continue;
      await rm(path.join(folder, file.name), { force: true });
      removed++;
    }
  }
  return removed;
}
