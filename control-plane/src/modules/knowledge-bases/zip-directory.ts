// The central directory of a ZIP archive (a DOCX is one), read without inflating anything: names and the
// sizes the archive declares for each entry. Used to refuse a zip bomb before mammoth (jszip) unpacks it.
// Layout (APPNOTE.TXT 4.3): entries' data first, then one central directory record per entry, then the
// End Of Central Directory record (EOCD), which may be followed by a comment of up to 65535 bytes.
// A declared size can lie; an entry that inflates past it is caught by jszip's length check afterwards and,
// before that, by the memory cap of the parsing process. This check stops the honest bombs cheaply.

export interface ZipEntry {
  name: string;
  compressedSize: number;
  uncompressedSize: number;
}

export class ZipFormatError extends Error {
  override name = 'ZipFormatError';
}

const EOCD_SIG = 0x06054b50;
const CDIR_SIG = 0x02014b50;
const EOCD_MIN = 22;
/** ZIP64 marks a field it moved to the ZIP64 records with all bits set. */
const ZIP64_U16 = 0xffff;
const ZIP64_U32 = 0xffffffff;

/** The entries of the central directory. Throws ZipFormatError on anything malformed or ZIP64. */
export function readZipDirectory(data: Buffer, maxEntries: number): ZipEntry[] {
  // The EOCD is the last record: search backwards from the end over at most a full comment's length.
  let eocd = -1;
  for (let i = data.length - EOCD_MIN; i >= Math.max(0, data.length - EOCD_MIN - 0xffff); i--) {
    if (data.readUInt32LE(i) === EOCD_SIG && i + EOCD_MIN + data.readUInt16LE(i + 20) === data.length) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new ZipFormatError('not a ZIP archive (no end of central directory)');
  const count = data.readUInt16LE(eocd + 10);
  const size = data.readUInt32LE(eocd + 12);
  const offset = data.readUInt32LE(eocd + 16);
  // ZIP64 archives (over 65535 entries or 4 GiB) are far beyond any document we accept.
  if (count === ZIP64_U16 || size === ZIP64_U32 || offset === ZIP64_U32) throw new ZipFormatError('ZIP64 archives are not accepted');
  if (count > maxEntries) throw new ZipFormatError(`the archive has ${count} entries (at most ${maxEntries})`);
  if (offset + size > eocd) throw new ZipFormatError('the central directory lies outside the archive');

  const entries: ZipEntry[] = [];
  let p = offset;
  for (let n = 0; n < count; n++) {
    // Fixed part of a central directory record: 46 bytes, then name, extra field and comment.
    if (p + 46 > offset + size || data.readUInt32LE(p) !== CDIR_SIG) throw new ZipFormatError('damaged central directory');
    const compressedSize = data.readUInt32LE(p + 20);
    const uncompressedSize = data.readUInt32LE(p + 24);
    const nameLen = data.readUInt16LE(p + 28);
    const extraLen = data.readUInt16LE(p + 30);
    const commentLen = data.readUInt16LE(p + 32);
    if (compressedSize === ZIP64_U32 || uncompressedSize === ZIP64_U32) throw new ZipFormatError('ZIP64 entries are not accepted');
    const end = p + 46 + nameLen + extraLen + commentLen;
    if (end > offset + size) throw new ZipFormatError('damaged central directory');
    entries.push({ name: data.toString('utf8', p + 46, p + 46 + nameLen), compressedSize, uncompressedSize });
    p = end;
  }
  return entries;
}
