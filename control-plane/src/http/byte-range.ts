// The `Range` request header (RFC 9110 §14), for files we stream ourselves (recordings). One range only:
// a multi-range request is answered in full (200), which §14.2 allows, so there is no multipart/byteranges
// body to build and no set of overlapping ranges to amplify a small request into a large answer.
// Anything the parser does not understand (another unit, bad syntax, first > last) is ignored, as §14.2 says a
// server may, and the whole file is served; the header can never make the answer fail.

export type ByteRange =
  /** No usable Range: answer 200 with the whole representation. */
  | { kind: 'full' }
  /** Answer 206 with bytes start..end (inclusive) and `Content-Range: bytes start-end/size`. */
  | { kind: 'partial'; start: number; end: number }
  /** Answer 416 with a `Content-Range` giving only the size (`bytes *` then a slash and the size). */
  | { kind: 'unsatisfiable' };

/** Longer headers are not a single byte range of any real client; they are ignored rather than parsed. */
const MAX_HEADER_LENGTH = 200;
const SPEC = /^(\d*)-(\d*)$/;

/**
 * Decides the answer to a `Range` header for a representation of `size` bytes. `ifRange` is the request's
 * `If-Range`: we send no validators (no ETag, no Last-Modified), so none can match and the range is ignored.
 */
export function parseByteRange(header: string | undefined, size: number, ifRange?: string): ByteRange {
  if (header === undefined || ifRange !== undefined || header.length > MAX_HEADER_LENGTH) return { kind: 'full' };
  const eq = header.indexOf('=');
  if (eq < 0 || header.slice(0, eq).trim().toLowerCase() !== 'bytes') return { kind: 'full' };
  const specs = header.slice(eq + 1).split(',');
  if (specs.length !== 1) return { kind: 'full' };
  const m = SPEC.exec(specs[0]!.trim());
  if (!m) return { kind: 'full' };
  const [, first = '', last = ''] = m;
  if (first === '' && last === '') return { kind: 'full' };
  // Digit strings only, so Number() is exact up to 2^53 and merely large above it: still compared correctly
  // against any real file size.
  if (first === '') {
    // Suffix: the last n bytes (all of them when n exceeds the size); none at all cannot be satisfied.
    const n = Number(last);
    if (n === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'partial', start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(first);
  if (last !== '' && Number(last) < start) return { kind: 'full' }; // invalid range-spec: ignored
  if (start >= size) return { kind: 'unsatisfiable' };
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  return { kind: 'partial', start, end };
}
