import { describe, expect, it } from 'vitest';
import { FirstLines } from '../../src/domain/audience/import-seen.ts';
import { LineCounter } from '../../src/domain/audience/import-upload.ts';

// Issue 48, import speed with memory bounded: the first line of each address in an import's file is
// kept compactly (a million addresses in tens of megabytes), and a file's lines are counted as its
// pieces stream past, a line break or a carriage return falling anywhere.

describe('FirstLines', () => {
  it('answers the first line of each address, as a Map would, through its growth', () => {
    const seen = new FirstLines(4);
    const map = new Map<string, number>();
    for (let line = 2; line < 60_000; line++) {
      // every fifth row repeats an earlier address; some addresses are not ASCII
      const n = line % 5 === 0 ? Math.floor(line / 7) : line;
      const address = n % 11 === 0 ? `jürgen.${n}@bücher.example` : `user${n}@example${n % 97}.com`;
      const expected = map.get(address);
      if (expected === undefined) map.set(address, line);
      expect(seen.firstOrAdd(address, line)).toBe(expected);
    }
  });

  it('keeps a million addresses in less than 64 MB', () => {
    const seen = new FirstLines();
    for (let i = 0; i < 1_000_000; i++) seen.firstOrAdd(`user${i}@example${i % 97}.com`, i + 2);
    expect(seen.firstOrAdd(`user999999@example${999_999 % 97}.com`, 5)).toBe(1_000_001);
    expect(seen.bytes).toBeLessThan(64 * 1024 * 1024);
  });
});

describe('LineCounter', () => {
  it('counts the same rows however the file is cut into pieces', () => {
    const file = Buffer.from('email\r\na@example.com\r\n\r\nb@example.com\n\nc@example.com\r\nd@example.com');
    for (let cut = 0; cut <= file.length; cut++) {
      for (const step of [1, 3, file.length]) {
        const counter = new LineCounter();
        counter.add(file.subarray(0, cut));
        for (let at = cut; at < file.length; at += step) counter.add(file.subarray(at, at + step));
        expect(counter.rows(1_000_000), `cut at ${cut}, then pieces of ${step}`).toBe(4);
      }
    }
  });
});
