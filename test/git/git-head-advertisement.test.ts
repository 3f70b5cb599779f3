// The v1 ref advertisement completed with HEAD when the server lists the followed branch but no HEAD.
import { describe, expect, it } from 'vitest';
import { withAdvertisedHead } from '../../src/git/git-head-advertisement.js';

const pkt = (s: string) => `${(s.length + 4).toString(16).padStart(4, '0')}${s}`;
const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const CAPS = 'multi_ack shallow ofs-delta agent=git/2.39.5';
const ad = (...lines: string[]) =>
  Buffer.from(`${pkt('# service=git-upload-pack\n')}0000${lines.map(pkt).join('')}0000`, 'latin1');
const text = (b: Uint8Array) => Buffer.from(b).toString('latin1');

describe('withAdvertisedHead', () => {
  it('adds HEAD naming the branch commit when the advertisement has none (HEAD names a missing branch)', () => {
    const body = ad(`${B} refs/heads/dev\0${CAPS}\n`, `${A} refs/heads/main\n`);
    expect(text(withAdvertisedHead(body, 'refs/heads/main'))).toBe(
      text(body).slice(0, -4) + pkt(`${A} HEAD\n`) + '0000',
    );
  });

  it('leaves it alone when HEAD is there, the branch is not, or it is not a v1 advertisement', () => {
    const unchanged = [
      ad(`${A} HEAD\0${CAPS}\n`, `${A} refs/heads/main\n`),
      ad(`${B} refs/heads/dev\0${CAPS}\n`),
      ad(`${A} refs/heads/main-old\0${CAPS}\n`),
      Buffer.from(`${pkt('version 2\n')}${pkt('ls-refs=unborn\n')}0000`),
      ad(`${A} refs/heads/main\0${CAPS}\n`).subarray(0, -4), // truncated: no final flush
      Buffer.from('not a pkt-line stream'),
      Buffer.alloc(0),
    ];
    for (const body of unchanged) expect(withAdvertisedHead(body, 'refs/heads/main')).toBe(body);
  });
});
