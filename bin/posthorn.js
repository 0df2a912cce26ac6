#!/usr/bin/env node
// The posthorn command. Node >= 22.18 runs the TypeScript sources directly (type stripping).
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(`posthorn needs Node.js 22.18 or newer (this is ${process.version}); run it with "npm exec posthorn" to use the bundled Node 24.`);
  process.exit(1);
}
await import('../src/main.ts');
