// Opens a zip for yauzl through a reader of our own that keeps every read inside the file (see BoundedFileReader).
import { close, fstat, open, read } from 'node:fs';
import { PassThrough, Readable } from 'node:stream';
import { promisify } from 'node:util';
import yauzl, { type ZipFile } from 'yauzl';

/**
 * The archive's bytes for yauzl, only within the file. yauzl's own reader (fd-slicer) hands fs.read whatever offset
 * the archive states, and fs.read throws, inside a callback where no caller can catch it, for one past 2^53 (a zip64
 * record pointing at 2^58): that took the whole process down. Here a range outside the file is an error yauzl reports
 * like any other (`KS_UNPACK_FORMAT`).
 */
class BoundedFileReader extends yauzl.RandomAccessReader {
  constructor(
    private readonly fd: number,
    private readonly size: number,
  ) {
    super();
  }

  override _readStreamForRange(start: number, end: number): Readable {
    if (Number.isSafeInteger(start) && Number.isSafeInteger(end) && start >= 0 && start < end && end <= this.size)
      return new RangeStream(this.fd, start, end);
    const refused = new PassThrough();
    setImmediate(() => refused.destroy(new Error(`the archive points at bytes ${start} to ${end}, outside its ${this.size} bytes`)));
    return refused;
  }

  override close(callback: (err: Error | null) => void): void {
    close(this.fd, (err) => callback(err));
  }
}

/**
 * Bytes [start, end) of `fd` by positioned reads. Not fs.createReadStream: destroying that one (as yauzl does with
 * every stream it is done with) closes the descriptor every other reader of the archive shares.
 */
class RangeStream extends Readable {
  private pos: number;

  constructor(
    private readonly fd: number,
    start: number,
    private readonly end: number,
  ) {
    super();
    this.pos = start;
  }

  override _read(size: number): void {
    const n = Math.min(size, this.end - this.pos);
    if (n <= 0) return void this.push(null);
    const buf = Buffer.allocUnsafe(n);
    read(this.fd, buf, 0, n, this.pos, (err, bytes) => {
      if (err) return void this.destroy(err);
      if (bytes === 0) return void this.destroy(new Error('the archive ended early (it shrank while being read)'));
      this.pos += bytes;
      this.push(buf.subarray(0, bytes));
    });
  }
}

/** The zip at `archivePath`, its descriptor closed by zip.close() (or here, when it does not open). */
export async function openZip(archivePath: string, options: yauzl.Options): Promise<ZipFile> {
  const fd = await promisify(open)(archivePath, 'r');
  try {
    const { size } = await promisify(fstat)(fd);
    return await yauzl.fromRandomAccessReaderPromise(new BoundedFileReader(fd, size), size, options);
  } catch (e) {
    // Opened, the zip file owns the descriptor (zip.close() closes it); not opened, nothing else will.
    close(fd, () => undefined);
    throw e;
  }
}
