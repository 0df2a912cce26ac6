import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../src/db/embedded.ts';
import { movedDataDir } from '../../src/db/embedded-place.ts';

const asRoot = process.getuid?.() === 0;

// issue 30, item 7: as root, PostgreSQL runs as the postgres user, which cannot enter a 0700 folder
describe.skipIf(!asRoot)(
  'the embedded PostgreSQL of a data dir the postgres user cannot enter (root only)',
  () => {
    const outer = mkdtempSync(path.join(tmpdir(), 'posthorn-place-')); // mode 0700
    const dataDir = path.join(outer, 'data');
    afterAll(() => {
      rmSync(outer, { recursive: true, force: true });
      rmSync(movedDataDir(dataDir), { recursive: true, force: true });
    });

    it('keeps its data in /var/lib/posthorn, says so, and stays there once the data dir becomes reachable', async () => {
      const notices: string[] = [];
      const first = await startEmbeddedPostgres({ dataDir, notice: (line) => notices.push(line) });
      await first.stop();
      expect(first.pgDir).toBe(movedDataDir(dataDir));
      expect(existsSync(path.join(movedDataDir(dataDir), 'PG_VERSION'))).toBe(true);
      expect(existsSync(path.join(dataDir, 'pg'))).toBe(false);
      expect(notices.join('\n')).toContain(`keeps the database of ${dataDir} in ${movedDataDir(dataDir)}`);

      chmodSync(outer, 0o755);
      const again = await startEmbeddedPostgres({ dataDir });
      await again.stop();
      expect(again.pgDir).toBe(movedDataDir(dataDir)); // not a new, empty database in dataDir/pg
    }, 60_000);
  },
);
