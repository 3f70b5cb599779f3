// Hand-written tar and zip encoders for the malicious-archive corpus: real archivers refuse to produce most of
// these entries (or normalize their names away), so the tests write the bytes themselves.
import { crc32, deflateRawSync, gzipSync } from 'node:zlib';

/** One tar record. `type` is the ustar typeflag: '0' file, '1' hardlink, '2' symlink, '3' char, '4' block, '5' dir, '6' fifo. */
export interface TarEntry {
  name: string;
  type?: string;
  data?: Uint8Array | string;
  mode?: number;
  linkname?: string;
  /** Overrides the size field (the body written is still `data`). */
  size?: number;
  /** Corrupts the header checksum. */
  badChecksum?: boolean;
}

/** A tar archive of `entries` (names over 100 bytes get a pax `path` record), with the two end blocks. */
export function buildTar(entries: readonly TarEntry[], opts: { trailer?: boolean } = {}): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const data = toBuffer(e.data ?? '');
    if (Buffer.byteLength(e.name) > 100) {
      const pax = paxRecord('path', e.name);
      blocks.push(tarHeader({ name: 'PaxHeader', type: 'x', size: pax.length }), pad(pax));
    }
    blocks.push(tarHeader({ ...e, name: Buffer.byteLength(e.name) > 100 ? 'long' : e.name, size: e.size ?? data.length }));
    if (data.length) blocks.push(pad(data));
  }
  if (opts.trailer !== false) blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

/** A .tar.gz of `entries`. */
export function buildTarGz(entries: readonly TarEntry[]): Buffer {
  return gzipSync(buildTar(entries));
}

/** One 512-byte ustar header. */
export function tarHeader(e: TarEntry & { size: number }): Buffer {
  const h = Buffer.alloc(512);
  h.write(e.name, 0, 100, 'utf8');
  octal(h, 100, 8, e.mode ?? (e.type === '5' ? 0o755 : 0o644));
  octal(h, 108, 8, 0); // uid
  octal(h, 116, 8, 0); // gid
  octal(h, 124, 12, e.size);
  octal(h, 136, 12, 1_700_000_000); // mtime
  h.write(e.type ?? '0', 156, 1, 'latin1');
  if (e.linkname) h.write(e.linkname, 157, 100, 'utf8');
  h.write('ustar\u000000', 257, 8, 'latin1');
  if (e.type === '3' || e.type === '4') {
    octal(h, 329, 8, 1); // devmajor
    octal(h, 337, 8, 3); // devminor
  }
  h.fill(0x20, 148, 156);
  let sum = 0;
  for (const b of h) sum += b;
  octal(h, 148, 7, e.badChecksum ? sum + 1 : sum);
  h[155] = 0x20;
  return h;
}

function octal(buf: Buffer, offset: number, length: number, value: number): void {
  buf.write(value.toString(8).padStart(length - 1, '0') + '\0', offset, length, 'latin1');
}

function paxRecord(key: string, value: string): Buffer {
  const body = ` ${key}=${value}\n`;
  let len = Buffer.byteLength(body) + 1;
  while (String(len).length + Buffer.byteLength(body) !== len) len = String(len).length + Buffer.byteLength(body);
  return Buffer.from(`${len}${body}`);
}

function pad(data: Buffer): Buffer {
  const rest = data.length % 512;
  return rest === 0 ? data : Buffer.concat([data, Buffer.alloc(512 - rest)]);
}

/** One zip entry. `unixMode` is a full st_mode (type and permission bits), recorded with a Unix "made by". */
export interface ZipEntry {
  name: string;
  data?: Uint8Array | string;
  /** 8 (deflate, the default) or 0 (stored). */
  method?: 0 | 8;
  unixMode?: number;
  /** Overrides the uncompressed size in both headers: a zip that lies about what it inflates to. */
  declaredSize?: number;
}

/** A zip archive: local headers and data, the central directory, the end record. `entryCount` overrides the latter's count. */
export function buildZip(entries: readonly ZipEntry[], opts: { entryCount?: number } = {}): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name, 'utf8');
    const data = toBuffer(e.data ?? '');
    const method = e.method ?? 8;
    const packed = method === 8 ? deflateRawSync(data) : data;
    const crc = crc32(data);
    const size = e.declaredSize ?? data.length;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(method, 8);
    local.writeUInt16LE(0, 10); // time
    local.writeUInt16LE(0x21, 12); // date: 1980-01-01
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(packed.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(e.unixMode === undefined ? 20 : (3 << 8) | 20, 4); // made by (3 = Unix)
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt16LE(0, 12);
    central.writeUInt16LE(0x21, 14);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(packed.length, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt16LE(0, 30); // extra
    central.writeUInt16LE(0, 32); // comment
    central.writeUInt16LE(0, 34); // disk
    central.writeUInt16LE(0, 36); // internal attributes
    central.writeUInt32LE(((e.unixMode ?? 0) << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, packed);
    centrals.push(central, name);
    offset += local.length + name.length + packed.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(opts.entryCount ?? entries.length, 8);
  end.writeUInt16LE(opts.entryCount ?? entries.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

function toBuffer(d: Uint8Array | string): Buffer {
  return typeof d === 'string' ? Buffer.from(d) : Buffer.from(d.buffer, d.byteOffset, d.byteLength);
}
