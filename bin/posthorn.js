#!/usr/bin/env -S node --max-semi-space-size=4
// --max-semi-space-size=4: a young generation of 4 MB semi-spaces keeps a busy worker's memory
// under 300 MB (V8's default lets it grow past 400 MB) for about a tenth of its speed; `npm start`
// passes the same flag.
// The posthorn command. Node >= 22.18 runs the TypeScript sources directly (type stripping).
import module from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(
    `posthorn needs Node.js 22.18 or newer (this is ${process.version}); run it with "npm exec posthorn" to use the bundled Node 24.`,
  );
  process.exit(1);
}

// Node's compile cache keeps each source file's type-stripped and compiled form on disk (keyed by
// its content): from the second start on, neither this process nor the template pool's threads
// load the TypeScript stripper (about 17 MB of memory each) or strip the sources again (a faster
// start). The threads and child processes find the cache through NODE_COMPILE_CACHE;
// NODE_DISABLE_COMPILE_CACHE=1 turns it off, and a cache that cannot be written is skipped.
if (!process.env.NODE_DISABLE_COMPILE_CACHE) {
  const dir = process.env.NODE_COMPILE_CACHE || path.join(tmpdir(), 'node-compile-cache');
  const { status } = module.enableCompileCache(dir);
  if (
    status === module.constants.compileCacheStatus.ENABLED ||
    status === module.constants.compileCacheStatus.ALREADY_ENABLED
  )
    process.env.NODE_COMPILE_CACHE = dir;
}

await import('../src/main.ts');
