import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const root = path.resolve(import.meta.dirname, '../..');
export const bin = (name: string, dir = root) => path.join(dir, 'node_modules', '.bin', name);

/**
 * Generates a typed client from the OpenAPI document `doc` with openapi-typescript (its own
 * TypeScript 5, tools/openapi-client), compiles `source` (which imports `paths` from './api.d.ts')
 * with strict tsc, runs it with `args` and gives what it printed, parsed as JSON. The folder is
 * inside the checkout (ignored by git), so the client resolves openapi-fetch as any project would.
 */
export async function runGeneratedClient(doc: unknown, source: string, args: string[]): Promise<any> {
  mkdirSync(path.join(root, '.test-output'), { recursive: true });
  const dir = mkdtempSync(path.join(root, '.test-output', 'openapi-client-'));
  try {
    const docFile = path.join(dir, 'openapi.json');
    writeFileSync(docFile, JSON.stringify(doc));
    const tool = path.join(root, 'tools', 'openapi-client');
    await run(bin('openapi-typescript', tool), [docFile, '-o', path.join(dir, 'api.d.ts')]);
    writeFileSync(path.join(dir, 'client.ts'), source);
    writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'esnext',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          allowImportingTsExtensions: true,
          types: ['node'],
          typeRoots: [path.join(root, 'node_modules', '@types')],
        },
        files: ['client.ts'],
      }),
    );
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    await run(bin('tsc'), ['-p', dir]).catch((err: { stdout: string }) => {
      throw new Error(`the generated client does not compile:\n${err.stdout}`);
    });
    const { stdout } = await run(process.execPath, [path.join(dir, 'client.ts'), ...args]);
    return JSON.parse(stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
