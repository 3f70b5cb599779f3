// The upload-pack response of a fetch (src/git/thin-pack-http.ts): pkt-lines, then side-band 1/2/3 with a thin
// pack to complete. Driven through thinPackHttp with a stand-in server that offers thin packs and answers the fuzz
// input. Seed captured from `git http-backend` (a thin pack, side-band-64k).
import fc from 'fast-check';
import type { GitHttpRequest, GitHttpResponse } from 'isomorphic-git';
import { OperationError } from '../../../src/core/errors.js';
import { thinPackHttp } from '../../../src/git/thin-pack-http.js';
import { loadCorpus } from '../corpus.js';
import { refusedWith, type FuzzTarget } from '../fuzz-target.js';
import { readBase } from '../git-bases.js';
import { pkt } from '../pkt-line.js';

const ADVERTISEMENT = Buffer.concat([
  pkt('# service=git-upload-pack\n'),
  Buffer.from('0000'),
  pkt(`${'a'.repeat(40)} refs/heads/main\0thin-pack side-band-64k ofs-delta no-progress\n`),
  Buffer.from('0000'),
]);
const WANT = Buffer.concat([pkt(`want ${'a'.repeat(40)} ofs-delta\n`), Buffer.from('0000'), pkt('done\n')]);

async function* once(b: Uint8Array) {
  yield b;
}
const response = (body: Uint8Array): GitHttpResponse => ({
  url: '',
  method: 'POST',
  statusCode: 200,
  statusMessage: 'OK',
  headers: {},
  body: once(body),
});

/** NAK or ACKs, then the thin-pack corpus cut into side-band 1 lines among progress (2) and errors (3). */
const structured = fc.constant(null).chain(() => {
  const packs = loadCorpus('thin-pack').map((f) => Buffer.from(f.bytes));
  return fc
    .tuple(
      fc.constantFrom(...packs),
      fc.array(fc.integer({ min: 1, max: 200 }), { minLength: 1, maxLength: 4 }),
      fc.array(fc.constantFrom(2, 3, 4, 0), { maxLength: 3 }),
      fc.constantFrom(pkt('NAK\n'), pkt(`ACK ${'a'.repeat(40)}\n`), Buffer.alloc(0)),
      fc.boolean(),
    )
    .map(([pack, cuts, others, head, flush]) => {
      const lines: Buffer[] = [head];
      let at = 0;
      for (const [i, n] of cuts.entries()) {
        const end = i === cuts.length - 1 ? pack.length : Math.min(pack.length, at + n);
        lines.push(pkt(Buffer.concat([Buffer.from([1]), pack.subarray(at, end)])));
        at = end;
        if (others[i] !== undefined)
          lines.push(pkt(Buffer.concat([Buffer.from([others[i]!]), Buffer.from('progress\n')])));
      }
      if (flush) lines.push(Buffer.from('0000'));
      return new Uint8Array(Buffer.concat(lines));
    });
});

export const uploadPackResponse: FuzzTarget = {
  name: 'upload-pack-response',
  parses: "thinPackHttp's response reader (src/git/thin-pack-http.ts): side-band pkt-lines with a thin pack",
  maxBytes: 8 * 1024,
  testRuns: 1_000,
  dictionary: ['0000', '\u0001PACK', '\u0002', '\u0003', 'NAK\n', 'ACK ', '0008NAK\n'],
  structured,
  async check(input) {
    const client = thinPackHttp(
      { request: async (req: GitHttpRequest) => response(req.method === 'GET' ? ADVERTISEMENT : input) },
      readBase,
    );
    await client.request({
      url: 'https://git.example/fleet.git/info/refs?service=git-upload-pack',
      method: 'GET',
      headers: {},
    });
    const res = await client.request({
      url: 'https://git.example/fleet.git/git-upload-pack',
      method: 'POST',
      headers: {},
      body: [WANT] as unknown as GitHttpRequest['body'],
    });
    try {
      for await (const chunk of res.body!) void chunk;
    } catch (e) {
      // KS_GIT_PACK_TOO_LARGE: a pack whose headers state more than a fetch may inflate (pack-inflation.ts).
      return refusedWith(
        e,
        (x) =>
          x instanceof OperationError &&
          ['KS_GIT_THIN_PACK', 'KS_GIT_PACK_CORRUPT', 'KS_GIT_PACK_TOO_LARGE'].includes(x.code),
      );
    }
    return 'accepted';
  },
};
