import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sparticuz, { inflate } from '@sparticuz/chromium';
import { type BrowserContext, chromium } from 'playwright-core';

export interface TestBrowser {
  context: BrowserContext;
  /** Closes the browser and removes its profile. */
  close(): Promise<void>;
}

/**
 * Headless Chromium from the npm package @sparticuz/chromium, so `npm test` needs no Debian package.
 * The package unpacks the browser (and its fonts) into the temp dir on first use. The NSS and expat
 * libraries the browser loads are shipped in the package too (al2023.tar.br), but put on the library
 * path only on Amazon Linux: here they go on the browser's LD_LIBRARY_PATH, so no system copy is
 * needed. The package's own `args` are not used: they switch off web security for Lambda. These
 * flags keep the browser off the network, with a fresh profile (--user-data-dir) for the run.
 */
export async function launchBrowser(): Promise<TestBrowser> {
  // test files run two at a time: on a fresh machine another process may still be writing the
  // unpacked browser when this one starts it (ETXTBSY): try again for a few seconds
  for (let attempt = 1; ; attempt++) {
    try {
      return await launchOnce();
    } catch (err) {
      if (attempt >= 10 || !/ETXTBSY|ENOENT|EACCES/.test(String(err))) throw err;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

async function launchOnce(): Promise<TestBrowser> {
  const executablePath = await sparticuz.executablePath();
  const bin = path.join(
    path.dirname(createRequire(import.meta.url).resolve('@sparticuz/chromium')),
    '../bin',
  );
  const libs = path.join(await inflate(path.join(bin, 'al2023.tar.br')), 'lib');
  const profileDir = mkdtempSync(path.join(tmpdir(), 'posthorn-chromium-profile-'));
  try {
    const context = await chromium.launchPersistentContext(profileDir, {
      executablePath,
      headless: true,
      env: {
        ...process.env,
        LD_LIBRARY_PATH: [libs, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':'),
        FONTCONFIG_PATH: path.join(tmpdir(), 'fonts'),
      },
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        // every host name but the loopback resolves to nothing
        '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1, EXCLUDE localhost',
      ],
    });
    return {
      context,
      async close() {
        await context.close();
        rmSync(profileDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(profileDir, { recursive: true, force: true });
    throw err;
  }
}
