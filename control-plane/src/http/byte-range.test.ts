// The Range parser: every form of a single byte range, and headers that must be ignored or refused.
import { describe, expect, it } from 'vitest';
import { parseByteRange } from './byte-range.ts';

const full = { kind: 'full' };
const unsat = { kind: 'unsatisfiable' };
const part = (start: number, end: number) => ({ kind: 'partial', start, end });

describe('parseByteRange', () => {
  it('serves a first-last range, clamping the last byte to the size', () => {
    expect(parseByteRange('bytes=0-0', 100)).toEqual(part(0, 0));
    expect(parseByteRange('bytes=10-19', 100)).toEqual(part(10, 19));
    expect(parseByteRange('bytes=90-500', 100)).toEqual(part(90, 99));
    expect(parseByteRange('bytes=99-99', 100)).toEqual(part(99, 99));
    expect(parseByteRange('Bytes = 5-6', 100)).toEqual(part(5, 6));
    expect(parseByteRange('bytes= 5-6 ', 100)).toEqual(part(5, 6));
  });

  it('serves an open range and a suffix', () => {
    expect(parseByteRange('bytes=0-', 100)).toEqual(part(0, 99));
    expect(parseByteRange('bytes=40-', 100)).toEqual(part(40, 99));
    expect(parseByteRange('bytes=-1', 100)).toEqual(part(99, 99));
    expect(parseByteRange('bytes=-30', 100)).toEqual(part(70, 99));
    expect(parseByteRange('bytes=-500', 100)).toEqual(part(0, 99));
  });

  it('refuses ranges that start past the end, an empty suffix, and any range of an empty file', () => {
    expect(parseByteRange('bytes=100-', 100)).toEqual(unsat);
    expect(parseByteRange('bytes=100-200', 100)).toEqual(unsat);
    expect(parseByteRange('bytes=-0', 100)).toEqual(unsat);
    expect(parseByteRange('bytes=0-', 0)).toEqual(unsat);
    expect(parseByteRange('bytes=-5', 0)).toEqual(unsat);
    expect(parseByteRange(`bytes=${'9'.repeat(40)}-`, 100)).toEqual(unsat);
  });

  it('handles numbers beyond 2^53 without error', () => {
    expect(parseByteRange(`bytes=0-${'9'.repeat(40)}`, 100)).toEqual(part(0, 99));
    expect(parseByteRange(`bytes=-${'9'.repeat(40)}`, 100)).toEqual(part(0, 99));
    expect(parseByteRange('bytes=9007199254740993-9007199254740999', 100)).toEqual(unsat);
  });

  it('ignores what it does not understand: the whole file is served', () => {
    for (const h of [
      undefined,
      '',
      'bytes',
      'bytes=',
      'bytes=-',
      'bytes=abc',
      'bytes=1-2-3',
      'bytes=0x10-20',
      'bytes=1.5-2',
      'bytes=+1-2',
      'bytes=-1-2',
      'bytes=20-10',
      'items=0-10',
      '=0-10',
      'bytes=0-1,2-3',
      'bytes=0-1, 5-',
      'bytes=0-1,',
      `bytes=0-${'1'.repeat(300)}`,
      'bytes=\u0660-\u0661',
    ]) {
      expect(parseByteRange(h, 100), String(h)).toEqual(full);
    }
  });

  it('ignores the range when If-Range is sent (no validator of ours can match)', () => {
    expect(parseByteRange('bytes=0-9', 100, 'Wed, 21 Oct 2015 07:28:00 GMT')).toEqual(full);
    expect(parseByteRange('bytes=0-9', 100, '"etag"')).toEqual(full);
  });
});
