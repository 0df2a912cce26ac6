#!/usr/bin/env -S node --max-semi-space-size=4
// --max-semi-space-size=4: a young generation of 4 MB semi-spaces keeps a busy worker's memory
// under 300 MB (V8's default lets it grow past 400 MB) for about a tenth of its speed; `npm start`
// passes the same flag.
// The posthorn command. Node >= 22.18 runs the TypeScript sources directly (type stripping).
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(`posthorn needs Node.js 22.18 or newer (this is ${process.version}); run it with "npm exec posthorn" to use the bundled Node 24.`);
  process.exit(1);
}
await import('../src/main.ts');
