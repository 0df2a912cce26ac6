import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The server on this machine, for a client command given no URL (issue 48, build item 7): a
 * running API writes where it listens to `server.json` in its data folder, and `posthorn login`
 * (or `signup`) started beside it finds it there; else the URL the local server would use
 * (POSTHORN_PUBLIC_URL, PORT), else port 3000. The command says which it took and why.
 */

const FILE = 'server.json';

export interface LocalServer {
  /** The API's base URL, including /v1. */
  apiUrl: string;
  /** Where it was found, in words, for the command's output. */
  source: string;
}

interface ServerFile {
  url: string;
  app_url?: string;
  pid: number;
}

const dataDirOf = (env: NodeJS.ProcessEnv) => path.resolve(env.POSTHORN_DATA_DIR || './.posthorn');

/**
 * Records a running API's address in its data folder; the returned function removes it (only while
 * it is still this process's: a newer server may have written its own).
 */
export function recordLocalServer(dataDir: string, url: string, appUrl: string): () => void {
  const file = path.join(dataDir, FILE);
  try {
    const record: ServerFile = { url, app_url: appUrl, pid: process.pid };
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  } catch {
    return () => {}; // a data folder we cannot write: the CLI falls back to PORT
  }
  return () => {
    try {
      if ((JSON.parse(readFileSync(file, 'utf8')) as ServerFile).pid === process.pid) rmSync(file);
    } catch {
      // gone already, or not ours to remove
    }
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // running, as another user
  }
}

/** The server recorded in the data folder, when its process still runs. */
function recorded(env: NodeJS.ProcessEnv): LocalServer | null {
  const dir = dataDirOf(env);
  const file = path.join(dir, FILE);
  if (!existsSync(file)) return null;
  try {
    const record = JSON.parse(readFileSync(file, 'utf8')) as ServerFile;
    if (typeof record.url !== 'string' || !Number.isInteger(record.pid) || !alive(record.pid)) return null;
    const shown = path.relative(process.cwd(), file) || file;
    return {
      apiUrl: `${record.url.replace(/\/+$/, '')}/v1`,
      source: `the server running here (process ${record.pid}, recorded in ${shown})`,
    };
  } catch {
    return null;
  }
}

/** The local server a command given no URL talks to, and how it was found. */
export function findLocalServer(env: NodeJS.ProcessEnv = process.env): LocalServer {
  const running = recorded(env);
  if (running) return running;
  if (env.POSTHORN_PUBLIC_URL)
    return {
      apiUrl: `${env.POSTHORN_PUBLIC_URL.replace(/\/+$/, '')}/v1`,
      source: 'POSTHORN_PUBLIC_URL',
    };
  if (env.PORT && /^\d+$/.test(env.PORT))
    return { apiUrl: `http://localhost:${env.PORT}/v1`, source: 'PORT' };
  return { apiUrl: 'http://localhost:3000/v1', source: 'the default port 3000' };
}
