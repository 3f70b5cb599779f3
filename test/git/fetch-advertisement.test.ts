// A fetch's ref advertisement (protocol v1 lists every ref) read only as far as the ref fetched
// (fetch-advertisement.ts): refs after it are never pulled from the body, those before it are left out but for the
// first line (the capabilities), and the library gets a complete advertisement (issue 28, finding 11). Against the
// real git http-backend, a fetch of a branch among 80,000 that share its name: test/e2e/ref-flood.e2e.test.ts.
import { describe, expect, it } from 'vitest';
import { advertisementUpTo } from '../../src/git/fetch-advertisement.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const pkt = (line: string) => `${(Buffer.byteLength(line) + 4).toString(16).padStart(4, '0')}${line}`;
const HEADER = `${pkt('# service=git-upload-pack\n')}0000`;
const CAPS = 'multi_ack thin-pack side-band side-band-64k ofs-delta shallow no-progress symref=HEAD:refs/heads/main';

function advertisement(refs: Array<[string, string]>): string {
  return (
    HEADER +
    refs.map(([oid, ref], i) => pkt(i === 0 ? `${oid} ${ref}\0${CAPS}\n` : `${oid} ${ref}\n`)).join('') +
    '0000'
  );
}

/** The body in chunks of `size`, counting how many were pulled and whether it was closed. */
function body(text: string, size = 64) {
  const chunks = Array.from({ length: Math.ceil(text.length / size) }, (_, i) =>
    Buffer.from(text.slice(i * size, (i + 1) * size)),
  );
  const state = { pulled: 0, of: chunks.length, closed: false };
  const it: AsyncIterableIterator<Uint8Array> = {
    next: async () =>
      state.pulled < chunks.length ? { done: false, value: chunks[state.pulled++]! } : { done: true, value: undefined },
    return: async () => ((state.closed = true), { done: true, value: undefined }),
    [Symbol.asyncIterator]() {
      return this;
    },
  };
  return { it, state };
}

describe('advertisementUpTo', () => {
  it('keeps the header, the capabilities line and the branch, and never pulls what comes after the branch', async () => {
    const flood = Array.from({ length: 2000 }, (_, i): [string, string] => [
      A,
      `refs/heads/main-${String(i).padStart(5, '0')}`,
    ]);
    const text = advertisement([
      [A, 'HEAD'],
      [B, 'refs/heads/feature'],
      [A, 'refs/heads/main'],
      ...flood,
      [A, 'refs/tags/v1'],
    ]);
    const { it, state } = body(text);
    const out = (await advertisementUpTo(it, 'refs/heads/main')).toString();
    expect(out).toBe(`${HEADER}${pkt(`${A} HEAD\0${CAPS}\n`)}${pkt(`${A} refs/heads/main\n`)}0000`);
    expect(state.pulled).toBeLessThan(10);
    expect(state.of).toBeGreaterThan(1000);
    expect(state.closed).toBe(true);
  });

  it("keeps a tag's peeled line, which comes right after it", async () => {
    const text = advertisement([
      [A, 'HEAD'],
      [B, 'refs/tags/v1'],
      [A, 'refs/tags/v1^{}'],
      [A, 'refs/tags/v2'],
    ]);
    const out = (await advertisementUpTo(body(text).it, 'refs/tags/v1')).toString();
    expect(out).toBe(
      `${HEADER}${pkt(`${A} HEAD\0${CAPS}\n`)}${pkt(`${B} refs/tags/v1\n`)}${pkt(`${A} refs/tags/v1^{}\n`)}0000`,
    );
  });

  it('a branch not listed: read to the end, the first line kept (the library then says the branch is missing)', async () => {
    const text = advertisement([
      [A, 'HEAD'],
      [B, 'refs/heads/feature'],
      [A, 'refs/heads/other'],
    ]);
    const { it, state } = body(text);
    expect((await advertisementUpTo(it, 'refs/heads/main')).toString()).toBe(
      `${HEADER}${pkt(`${A} HEAD\0${CAPS}\n`)}0000`,
    );
    expect(state.pulled).toBe(state.of);
  });

  it('an empty repository, the branch as the first line, and a body that is no advertisement pass as they are', async () => {
    const empty = `${HEADER}${pkt(`${'0'.repeat(40)} capabilities^{}\0${CAPS}\n`)}0000`;
    expect((await advertisementUpTo(body(empty).it, 'refs/heads/main')).toString()).toBe(empty);
    const first = advertisement([
      [A, 'refs/heads/main'],
      [B, 'refs/heads/main-2'],
    ]);
    expect((await advertisementUpTo(body(first).it, 'refs/heads/main')).toString()).toBe(
      `${HEADER}${pkt(`${A} refs/heads/main\0${CAPS}\n`)}0000`,
    );
    expect((await advertisementUpTo(body('<html>not git</html>').it, 'refs/heads/main')).toString()).toBe(
      '<html>not git</html>',
    );
  });
});
