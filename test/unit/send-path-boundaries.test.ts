// The send path's boundaries, read off the source tree (issue 46): which files may read the routes
// configuration. A file that crosses one fails here with its name and the line, so a change that
// spreads a concern again is caught in review rather than found in an incident.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.join(import.meta.dirname, '../../src');

function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** Each line of a file under src/ (path relative to src/) that matches `pattern`. */
function linesMatching(pattern: RegExp, allowed: (file: string) => boolean): string[] {
  return sources().flatMap((file) => {
    const rel = path.relative(SRC, file);
    if (allowed(rel)) return [];
    return readFileSync(file, 'utf8')
      .split('\n')
      .flatMap((line, i) => (pattern.test(line) ? [`${rel}:${i + 1}: ${line.trim()}`] : []));
  });
}

/** Reading the routes configuration: its fields, and the modules that parse and match it. */
const READS_ROUTES =
  /config\.routes\b|\.routes\.routes\b|\brouteTarget\(|routes\/(config|choose|direct-config)\.ts/;

describe('the send path keeps its concerns in one place each', () => {
  it('only the routes module reads the routes configuration (the rest asks delivery/routes/view.ts)', () => {
    const routesModule = (file: string) => file.startsWith('delivery/') || file === 'config.ts';
    expect(linesMatching(READS_ROUTES, routesModule)).toEqual([]);
  });

  it('the check above sees a reader when there is one', () => {
    // the routes module builds its transports from the configuration: found when not allowed
    const found = linesMatching(READS_ROUTES, (file) => file === 'config.ts');
    expect(found.some((line) => line.startsWith('delivery/index.ts'))).toBe(true);
  });

  it('one session pool: every file that opens SMTP sessions to send keeps them in delivery/session-pool.ts', () => {
    const opening = sources().filter((file) => /new SMTPConnection\(/.test(readFileSync(file, 'utf8')));
    const rel = opening.map((file) => path.relative(SRC, file)).sort();
    // the relay's sessions and a direct route's lanes; the gate's one-off checks open none
    expect(rel).toEqual(['delivery/direct/lanes.ts', 'delivery/smtp-pool.ts']);
    for (const file of opening) expect(readFileSync(file, 'utf8')).toMatch(/new SessionPool</);
  });

  it('only the shaping module keeps the state of a limit (rates, the breaker, warm-ups, connection leases)', () => {
    const limitTables =
      /\b(send_rates|breaker_counts|breaker_trips|warmup_usage|warmup_source_usage|connection_leases)\b/;
    const shaping = (file: string) => file.startsWith('domain/shaping/') || file === 'db/schema.ts';
    expect(linesMatching(limitTables, shaping)).toEqual([]);
  });

  it('the send path asks one module for its limits: deliver.ts imports shaping/limits.ts, not its parts', () => {
    const deliver = readFileSync(path.join(SRC, 'domain/sending/deliver.ts'), 'utf8');
    expect(deliver).toMatch(/from '\.\.\/shaping\/limits\.ts'/);
    expect(deliver).not.toMatch(/shaping\/(pace|breaker-write|warmup|warmup-count|watched)\.ts/);
  });
});
