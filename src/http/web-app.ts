import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { esc } from './html.ts';
import { answerFrameworkError } from './request-checks.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** The dashboard's sources (React + Vite) and where its build goes (git-ignored). */
export const WEB_SOURCES = path.join(ROOT, 'web');
export const WEB_DIST = path.join(ROOT, 'dist/web');
const VITE_CONFIG = path.join(WEB_SOURCES, 'vite.config.ts');

/** Paths the app never answers: the API, the dashboard API, the links in mail, the CLI pairing page, the terms. */
const RESERVED = ['/v1', '/api', '/u', '/t', '/pair', '/terms', '/healthz', '/readyz', '/metrics'];

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.svg', '.json', '.map', '.txt']);

/**
 * The app's Content-Security-Policy: scripts only from this origin (the build has no inline
 * script). Inline styles and https images are allowed because the message preview (an iframe
 * with `sandbox=""` and `srcdoc`, which inherits this policy) shows email HTML as mail clients do.
 */
export const APP_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: https:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name));
}

function newestChange(files: string[]): number {
  return files.reduce((newest, file) => Math.max(newest, statSync(file).mtimeMs), 0);
}

/** Whether dist/web holds a build at least as new as every source file of the app. */
export function webBuildIsFresh(): boolean {
  const index = path.join(WEB_DIST, 'index.html');
  if (!existsSync(index)) return false;
  const sources = [...filesUnder(WEB_SOURCES), path.join(ROOT, 'package-lock.json')].filter(existsSync);
  return statSync(index).mtimeMs >= newestChange(sources);
}

function viteBin(): string | null {
  try {
    return path.join(
      path.dirname(createRequire(import.meta.url).resolve('vite/package.json')),
      'bin/vite.js',
    );
  } catch {
    return null;
  }
}

/** Runs `vite build` in a process of its own (Vite sets NODE_ENV, and its memory goes with it). */
function runViteBuild(bin: string, outDir: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const args = [
      bin,
      'build',
      '--config',
      VITE_CONFIG,
      '--outDir',
      outDir,
      '--emptyOutDir',
      '--logLevel',
      'warn',
    ];
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`building the dashboard failed (exit ${code}):\n${output}`)),
    );
  });
}

/**
 * Builds the dashboard when its build is missing or older than its sources, so `npm start` on a
 * fresh clone (or after a pull) serves the current app with no extra command. The build goes to a
 * temporary folder first: a server reading dist/web never sees half a build.
 */
export async function ensureWebBuild(log?: { info(msg: string): void; warn(msg: string): void }) {
  if (!existsSync(VITE_CONFIG) || webBuildIsFresh()) return;
  const bin = viteBin();
  if (!bin) {
    log?.warn('the dashboard is not built and Vite is not installed: run `npm install` to build it');
    return;
  }
  log?.info('building the dashboard (web/ is newer than dist/web)');
  const outDir = `${WEB_DIST}.tmp-${process.pid}-${Date.now().toString(36)}`;
  try {
    await runViteBuild(bin, outDir);
    rmSync(WEB_DIST, { recursive: true, force: true });
    renameSync(outDir, WEB_DIST);
  } catch (err) {
    // another process may have built it at the same moment: its build is as good as ours
    if (!webBuildIsFresh()) throw err;
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
}

interface StaticFile {
  body: Buffer;
  type: string;
  gzip?: Buffer;
  compressible: boolean;
}

function loadBuild(dir: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  for (const file of filesUnder(dir)) {
    const ext = path.extname(file);
    files.set(path.relative(dir, file).split(path.sep).join('/'), {
      body: readFileSync(file),
      type: TYPES[ext] ?? 'application/octet-stream',
      compressible: COMPRESSIBLE.has(ext),
    });
  }
  return files;
}

function sendFile(request: FastifyRequest, reply: FastifyReply, file: StaticFile, cache: string) {
  reply
    .header('content-type', file.type)
    .header('cache-control', cache)
    .header('x-content-type-options', 'nosniff');
  if (file.compressible && file.body.length > 1024) {
    reply.header('vary', 'accept-encoding');
    if (/\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''))) {
      file.gzip ??= gzipSync(file.body, { level: 9 });
      return reply.header('content-encoding', 'gzip').send(file.gzip);
    }
  }
  return reply.send(file.body);
}

/** The path the dashboard is served at (`/` by default), with its trailing slash. */
export function appPathOf(appUrl: string): string {
  const pathname = new URL(appUrl).pathname;
  return pathname.endsWith('/') ? pathname : `${pathname}/`;
}

function isReserved(urlPath: string): boolean {
  return RESERVED.some((prefix) => urlPath === prefix || urlPath.startsWith(`${prefix}/`));
}

// the router's limit on a path parameter (find-my-way's default, which buildApp keeps)
const MAX_PARAM_LENGTH = 100;

/**
 * A reserved path that reached the app's catch-all: the router found no route of its own. When a
 * segment is over the parameter limit, the router would have refused it (414) had the catch-all not
 * been there to fall back on: answer that, as before; else the API's 404.
 */
function answerReserved(request: FastifyRequest, reply: FastifyReply, urlPath: string) {
  if (urlPath.split('/').some((segment) => segment.length > MAX_PARAM_LENGTH)) {
    const tooLong = Object.assign(new Error('path parameter too long'), { code: 'FST_ERR_MAX_PARAM_LENGTH' });
    return answerFrameworkError(tooLong as FastifyError, request, reply);
  }
  return reply.callNotFound();
}

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Posthorn</title></head>
<body><h1>The dashboard is not built</h1><p>Run <code>npm run build:web</code> (or <code>npm install</code>) and restart. The API at <a href="/v1/">/v1</a> works.</p></body></html>`;

/**
 * Serves the dashboard at the path of `POSTHORN_APP_URL` (`/` by default): hashed assets cached for
 * a year, and `index.html` for every other path under it (the app's own routes), with a `<base>`
 * naming the path so one build works anywhere. The API, the dashboard API and the links in mail
 * keep their paths: an unknown path there is still the API's JSON 404.
 */
export async function webAppRoutes(app: FastifyInstance, opts: { appUrl: string; distDir?: string }) {
  const base = appPathOf(opts.appUrl);
  const files = loadBuild(opts.distDir ?? WEB_DIST);
  const index = files.get('index.html');
  const page = index
    ? index.body.toString('utf8').replace('<head>', `<head>\n    <base href="${esc(base)}">`)
    : NOT_BUILT;
  const indexFile: StaticFile = { body: Buffer.from(page), type: TYPES['.html'], compressible: true };

  const serve = async (request: FastifyRequest, reply: FastifyReply) => {
    const urlPath = request.url.split('?')[0];
    if (isReserved(urlPath)) return answerReserved(request, reply, urlPath);
    if (!urlPath.startsWith(base)) return reply.callNotFound();
    let relative: string;
    try {
      relative = decodeURIComponent(urlPath.slice(base.length));
    } catch {
      return reply.callNotFound();
    }
    const file = relative === 'index.html' ? undefined : files.get(relative);
    if (file) {
      const immutable = relative.startsWith('assets/');
      return sendFile(
        request,
        reply,
        file,
        immutable ? 'public, max-age=31536000, immutable' : 'public, max-age=3600',
      );
    }
    // a missing asset is a 404, not the app: a stale page must not run HTML as a script
    if (relative.startsWith('assets/')) return reply.callNotFound();
    reply
      .code(index ? 200 : 503)
      .header('content-security-policy', APP_CSP)
      .header('referrer-policy', 'no-referrer')
      .header('x-frame-options', 'DENY');
    return sendFile(request, reply, indexFile, 'no-cache');
  };

  const route = { config: { auth: 'none' as const }, schema: { hide: true } };
  app.get(`${base}*`, route, serve);
  if (base !== '/') app.get(base.slice(0, -1), route, (_request, reply) => reply.redirect(base, 308));
}
