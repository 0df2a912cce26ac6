import path from 'node:path';
import react from '@vitejs/plugin-react';
import { defineConfig, type UserConfig } from 'vite';

const root = import.meta.dirname;

/**
 * The dashboard's build: `npm run build:web` (also run by `npm install` through `prepare`, and by
 * `posthorn start` when the output is missing or older than the sources). Assets get hashed names
 * and a relative base, so one build serves at any `POSTHORN_APP_URL` path (the server adds `<base>`).
 */
const config = {
  root,
  base: './',
  publicDir: path.join(root, 'public'),
  plugins: [react()],
  build: {
    outDir: path.join(root, '../dist/web'),
    emptyOutDir: true,
    target: 'es2022',
    // no inline scripts or styles: the Content-Security-Policy allows scripts from 'self' only
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: true,
    // a screen's own chunk (charts, the code editor, the flow graph) loads only with that screen;
    // what the first page loads is measured by `npm run bench:dashboard` (target < 300 KB gzipped)
    chunkSizeWarningLimit: 1000,
  },
} satisfies UserConfig;

export default defineConfig(({ command }) => {
  // React's production build whatever NODE_ENV the caller has (the tests run with `test`); Vite reads
  // it after loading this file, and the build runs in a process of its own (`vite build`)
  if (command === 'build') process.env.NODE_ENV = 'production';
  return config;
});
