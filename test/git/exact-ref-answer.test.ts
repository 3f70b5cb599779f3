// A look's ls-refs answer read only as far as the followed ref (exact-ref-answer.ts): whatever shares its prefix after
// it is never pulled from the body (issue 28, finding 11); the reduced answer is the ref's line and a flush, however
// the body is cut into chunks; what is not a listing is KS_GIT_SERVER_UNSUPPORTED.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { exactRefAnswer } from '../../src/git/exact-ref-answer.js';

const OID = 'a'.repeat(40);
const pkt = (line: string) => `${(Buffer.byteLength(line) + 4).toString(16).padStart(4, '0')}${line}`;
const listing = (refs: string[]) => refs.map((r) => pkt(`${OID} ${r}\n`)).join('') + '0000';

/** A body of `chunks`, counting how many were pulled and whether it was closed. */
function body(chunks: string[]) {
  const state = { pulled: 0, closed: false };
  const it: AsyncIterableIterator<Uint8Array> = {
    next: async () =>
      state.pulled < chunks.length
        ? { done: false, value: Buffer.from(chunks[state.pulled++]!) }
        : { done: true, value: undefined },
    return: async () => {
      state.closed = true;
      return { done: true, value: undefined };
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
  return { it, state };
}

async function read(chunks: string[], ref = 'refs/heads/main'): Promise<string> {
  const out: Buffer[] = [];
  for await (const c of exactRefAnswer(body(chunks).it, ref, 'http://h/r.git')) out.push(Buffer.from(c));
  return Buffer.concat(out).toString();
}

describe('exactRefAnswer', () => {
  it('stops at the ref: the flood after it is never pulled, and the body is closed', async () => {
    const flood = Array.from({ length: 1000 }, (_, i) => pkt(`${OID} refs/heads/main-${i}\n`));
    const { it: source, state } = body([pkt(`${OID} refs/heads/main\n`), ...flood, '0000']);
    const out: Buffer[] = [];
    for await (const c of exactRefAnswer(source, 'refs/heads/main', 'http://h/r.git')) out.push(Buffer.from(c));
    expect(Buffer.concat(out).toString()).toBe(`${pkt(`${OID} refs/heads/main\n`)}0000`);
    expect(state.pulled).toBe(1);
    expect(state.closed).toBe(true);
  });

  it('finds the ref after other lines (a listing out of order), and says none when it is not there', async () => {
    expect(await read([listing(['refs/heads/main-old', 'refs/heads/main'])])).toBe(
      `${pkt(`${OID} refs/heads/main\n`)}0000`,
    );
    expect(await read([listing(['refs/heads/main-old', 'refs/heads/mainline'])])).toBe('0000');
    expect(await read([listing([])])).toBe('0000');
  });

  it('gives the same answer however the body is cut', async () => {
    const whole = listing(['refs/heads/ma', 'refs/heads/main-1', 'refs/heads/main', 'refs/heads/main-2']);
    const want = `${pkt(`${OID} refs/heads/main\n`)}0000`;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.integer({ min: 1, max: whole.length - 1 }), { maxLength: 12 }),
        async (cuts) => {
          const at = [0, ...cuts.sort((a, b) => a - b), whole.length];
          expect(await read(at.slice(1).map((end, i) => whole.slice(at[i], end)))).toBe(want);
        },
      ),
    );
  });

  it.each([
    ['not pkt-lines', ['PACK....']],
    ['a bad length', ['0003']],
    ['no flush', [pkt(`${OID} refs/heads/x\n`)]],
    ['an empty answer', []],
    ['an ERR line', [pkt('ERR no\n')]],
    ['not a ref line', [pkt('hello\n') + '0000']],
    ['more after the flush', [`${listing(['refs/heads/x'])}0000`]],
  ])('refuses %s as KS_GIT_SERVER_UNSUPPORTED', async (_what, chunks) => {
    await expect(read(chunks)).rejects.toMatchObject({ code: 'KS_GIT_SERVER_UNSUPPORTED' });
  });
});
