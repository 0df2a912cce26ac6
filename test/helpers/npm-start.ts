import { type ChildProcess, execFileSync } from 'node:child_process';
import { eventually } from './eventually.ts';

/** The pid of `node … bin/posthorn.js start` under npm (npm may run it through a shell). */
export function programPid(npmPid: number): number {
  const rows = execFileSync('ps', ['-e', '-o', 'pid=,ppid=,args='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((line) => line.trim().match(/^(\d+)\s+(\d+)\s+(.*)$/))
    .filter((m): m is RegExpMatchArray => m !== null)
    .map((m) => ({ pid: Number(m[1]), ppid: Number(m[2]), args: m[3] }));
  const under = new Set([npmPid]);
  for (let grown = true; grown; ) {
    grown = false;
    for (const row of rows)
      if (under.has(row.ppid) && !under.has(row.pid)) {
        under.add(row.pid);
        grown = true;
      }
  }
  const program = rows.find(
    (row) => under.has(row.pid) && /^\S*node .*bin\/posthorn\.js start/.test(row.args),
  );
  if (!program) throw new Error(`no "bin/posthorn.js start" under npm (pid ${npmPid})`);
  return program.pid;
}

/**
 * Stops `npm start` (spawned with `detached: true`) as a service manager would: SIGTERM to the
 * program itself, then waits until it has exited; the process group is killed if it has not within
 * `timeoutMs`. npm answers a signal by dying of it without waiting for its script, so signalling npm
 * alone leaves the server running, orphaned, with its embedded PostgreSQL.
 */
export async function stopNpmStart(child: ChildProcess, timeoutMs = 60_000): Promise<void> {
  if (!child.pid) return;
  let program: number | null = null;
  try {
    program = programPid(child.pid);
  } catch {
    // npm has no program under it (it never started it, or it has exited)
  }
  if (program !== null) {
    const pid = program;
    process.kill(pid, 'SIGTERM');
    const gone = () => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    };
    await eventually(gone, {
      timeoutMs,
      intervalMs: 100,
      message: `npm start (pid ${pid}) did not stop`,
    }).catch(() => {});
  }
  try {
    process.kill(-child.pid, 'SIGKILL'); // whatever is left of the group (npm, its shell)
  } catch {
    // the group has ended
  }
}
