// Fuzzing the thin-pack completion (src/git/thin-pack.ts), a parser of what a Git host sends: whatever the bytes,
// completeThinPack returns a pack with a valid checksum or refuses with KS_GIT_THIN_PACK; it never throws anything
// else and never loops (each run under a deadline). Inputs: arbitrary bytes, and mutations of a valid thin pack with
// the trailing checksum recomputed half of the time, so that they reach past the first check into the deltas.
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OperationError } from '../../src/core/errors.js';
import { requestable } from '../../src/git/thin-pack-http.js';
import { completeThinPack, type BaseObject } from '../../src/git/thin-pack.js';

const RUNS = 1_500;
const BASE = Buffer.from('hello world\n');
const BASE_OID = createHash('sha1').update(`blob ${BASE.length}\0`).update(BASE).digest('hex');

/** A pack entry's header: type and inflated size, 4 bits then 7 per byte. */
function entryHeader(type: number, size: number): Buffer {
  const out = [(type << 4) | (size & 0x0f)];
  let rest = size >> 4;
  while (rest > 0) {
    out[out.length - 1]! |= 0x80;
    out.push(rest & 0x7f);
    rest >>= 7;
  }
  return Buffer.from(out);
}

function withChecksum(body: Buffer): Buffer {
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}

/** A whole blob, a ref-delta against BASE (outside the pack: "hello there\n"), and an ofs-delta against the blob. */
const valid = (() => {
  const blob = Buffer.from('abcdefgh');
  const refDelta = Buffer.from([12, 12, 0x90, 6, 6, ...Buffer.from('there\n')]); // copy "hello ", insert "there\n"
  const ofsDelta = Buffer.from([8, 9, 0x90, 8, 1, ...Buffer.from('!')]); // copy the blob, insert "!"
  const head = Buffer.from('PACK\0\0\0\x02\0\0\0\x03', 'latin1');
  const e1 = Buffer.concat([entryHeader(3, blob.length), deflateSync(blob)]);
  const e2 = Buffer.concat([entryHeader(7, refDelta.length), Buffer.from(BASE_OID, 'hex'), deflateSync(refDelta)]);
  const e3Offset = head.length + e1.length + e2.length;
  // The ofs-delta's distance back to the blob (offset 12), in git's offset encoding: one byte while under 128.
  const e3 = Buffer.concat([
    entryHeader(6, ofsDelta.length),
    Buffer.from([e3Offset - head.length]),
    deflateSync(ofsDelta),
  ]);
  return withChecksum(Buffer.concat([head, e1, e2, e3]));
})();

const readBase = async (oid: string): Promise<BaseObject | undefined> =>
  oid === BASE_OID ? { type: 'blob', object: BASE } : undefined;

/** A valid pack with a few bytes changed, cut or grown; its checksum made right again when `fix`. */
const mutated = fc
  .tuple(
    fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }),
    fc.nat(),
    fc.uint8Array({ maxLength: 16 }),
    fc.boolean(),
  )
  .map(([flips, cut, extra, fix]) => {
    const body = Buffer.from(valid.subarray(0, valid.length - 20));
    for (const [i, v] of flips) body[12 + (i % (body.length - 12))] = v; // past the header, into the entries
    const grown = Buffer.concat([body.subarray(0, body.length - (cut % 6)), Buffer.from(extra)]);
    return fix ? withChecksum(grown) : Buffer.concat([grown, valid.subarray(valid.length - 20)]);
  });

/** Rejects once `ms` have passed: a loop shows as a failure, not as a run that never ends. */
function withDeadline<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  const deadline = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)),
  );
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}

describe('fuzz: completing a thin pack', () => {
  it('the valid pack completes: its base from outside added, a checksum that holds', async () => {
    const out = Buffer.from(await completeThinPack(valid, readBase));
    expect(out.readUInt32BE(8)).toBe(4);
    expect(
      createHash('sha1')
        .update(out.subarray(0, out.length - 20))
        .digest()
        .equals(out.subarray(out.length - 20)),
    ).toBe(true);
  });

  it('returns a checksummed pack or refuses with KS_GIT_THIN_PACK, for arbitrary and mutated bytes, never looping', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.uint8Array({ maxLength: 300 }), mutated), async (bytes) => {
        let out: Uint8Array;
        try {
          out = await withDeadline(completeThinPack(bytes, readBase), 2_000);
        } catch (e) {
          expect(e).toBeInstanceOf(OperationError);
          expect((e as OperationError).code).toBe('KS_GIT_THIN_PACK');
          return;
        }
        const b = Buffer.from(out);
        expect(b.subarray(0, 4).toString('latin1')).toBe('PACK');
        expect(
          createHash('sha1')
            .update(b.subarray(0, b.length - 20))
            .digest()
            .equals(b.subarray(b.length - 20)),
        ).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('fuzz: the capabilities read from an advertisement', () => {
  it('never throws, and asks for nothing but thin-pack and no-progress', () => {
    const advert = Buffer.from(
      `001e# service=git-upload-pack\n0000${'a'.repeat(40)} HEAD\0multi_ack thin-pack side-band-64k no-progress\n0000`,
    );
    const near = fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })).map(([i, v]) => {
      const b = Buffer.from(advert);
      b[i % b.length] = v;
      return b;
    });
    expect(requestable(advert)).toEqual(['thin-pack', 'no-progress']);
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 200 }), near), (bytes) => {
        const caps = requestable(bytes);
        expect(caps.every((c) => c === 'thin-pack' || c === 'no-progress')).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });
});
