// The size of what the dashboard's first page loads, gzipped (level 9): the module script of
// dist/web/index.html, its modulepreloads and its stylesheets. A screen's own chunks (the template
// editor, its visual view with GrapesJS, the flow graph) are not counted: they load with that screen.
// Run after `npm run build:web`: node bench/first-page.ts
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { machine } from './server.ts';

const dist = path.resolve(process.argv[2] ?? path.join(import.meta.dirname, '..', 'dist', 'web'));
const html = readFileSync(path.join(dist, 'index.html'), 'utf8');
const refs = [
  ...html.matchAll(
    /<script[^>]+src="([^"]+)"|<link[^>]+rel="(?:modulepreload|stylesheet)"[^>]+href="([^"]+)"/g,
  ),
].map((m) => (m[1] ?? m[2]).replace(/^\.?\//, ''));
let js = 0;
let css = 0;
for (const file of refs) {
  const size = gzipSync(readFileSync(path.join(dist, file)), { level: 9 }).length;
  if (file.endsWith('.css')) css += size;
  else js += size;
}
const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
console.log(`First page of the dashboard, gzipped, ${machine()}`);
console.log(`  JavaScript ${kb(js)}, CSS ${kb(css)}, together ${kb(js + css)} (${refs.length} files)`);
