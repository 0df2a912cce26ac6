import { describe, expect, it } from 'vitest';
import { rowsEstimate } from '../../src/domain/audience/import-rows.ts';

// Issue 48, build item 1: an import's total is known from its start, so progress reads "n of total".

const csv = (text: string) => ({ format: 'csv', source: Buffer.from(text) });

describe('rowsEstimate', () => {
  it('counts the non-empty lines after the header, with or without a last line break', () => {
    expect(rowsEstimate(csv('email\na@example.com\nb@example.com\n'))).toBe(2);
    expect(rowsEstimate(csv('email\r\na@example.com\r\n\r\nb@example.com'))).toBe(2);
    expect(rowsEstimate(csv('email\n'))).toBe(0);
    expect(rowsEstimate(csv('email'))).toBe(0);
  });

  it('has no estimate for JSON', () => {
    expect(rowsEstimate({ format: 'json', source: Buffer.from('[{"email":"a@example.com"}]') })).toBeNull();
  });
});
