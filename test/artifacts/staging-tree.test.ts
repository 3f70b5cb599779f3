// The write-side policy on its own: bytes are counted as written, whatever a header claimed, and a refused
// entry never reaches the disk.
import { describe, it, expect, afterEach } from 'vitest';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { ArtifactError } from '../../src/artifacts/artifact-error.js';
import { entryPathParts, StagingTree } from '../../src/artifacts/staging-tree.js';
import { resolveUnpackLimits } from '../../src/artifacts/unpack-limits.js';
import { tempDir } from './fs-snapshot.js';

let t: { dir: string; cleanup(): void } | undefined;
afterEach(() => t?.cleanup());

async function* chunks(n: number, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < n; i++) yield Buffer.alloc(size, 0x62);
}

describe('StagingTree', () => {
  it('counts the bytes actually written, not the size claimed, and stops before the limit', async () => {
    t = tempDir('ks-stage-');
    const tree = new StagingTree(t.dir, resolveUnpackLimits({ maxTotalBytes: 10_000 }));
    const e = tree.plan('liar.bin', 'file', 10); // claims 10 bytes
    const err = await tree.writeFile(e!, chunks(100, 1000), false).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(ArtifactError);
    expect((err as ArtifactError).code).toBe('KS_UNPACK_TOO_LARGE');
    expect(tree.bytesWritten).toBe(10_000);
    expect(statSync(`${t.dir}/liar.bin`).size).toBe(10_000);
  });

  it('creates files exclusively with sanitized modes', async () => {
    t = tempDir('ks-stage-');
    const tree = new StagingTree(t.dir, resolveUnpackLimits());
    await tree.writeFile(tree.plan('a/b/run', 'file')!, chunks(1, 3), true);
    await tree.writeFile(tree.plan('a/data', 'file')!, chunks(1, 3), false);
    expect(readFileSync(`${t.dir}/a/b/run`, 'utf8')).toBe('bbb');
    expect((statSync(`${t.dir}/a/b/run`).mode & 0o7777).toString(8)).toBe('755');
    expect((statSync(`${t.dir}/a/data`).mode & 0o7777).toString(8)).toBe('644');
    expect(readdirSync(t.dir)).toEqual(['a']);
  });

  it('normalizes harmless names and refuses dangerous ones', () => {
    const lim = resolveUnpackLimits({ maxDepth: 3 });
    expect(entryPathParts('./a//b/./c', lim)).toEqual(['a', 'b', 'c']);
    expect(entryPathParts('./', lim)).toEqual([]);
    const reason = (name: string): unknown => {
      try {
        entryPathParts(name, lim);
        return 'accepted';
      } catch (e) {
        return (e as ArtifactError).data.reason ?? (e as ArtifactError).code;
      }
    };
    expect(reason('a/../../b')).toBe('parent-directory');
    expect(reason('..')).toBe('parent-directory');
    expect(reason('/etc/passwd')).toBe('absolute-path');
    expect(reason('c:\\x')).toBe('backslash');
    expect(reason('D:/x')).toBe('absolute-path');
    expect(reason('a\0b')).toBe('nul-byte');
    expect(reason('a/b/c/d')).toBe('KS_UNPACK_TOO_DEEP');
    expect(reason('x'.repeat(256))).toBe('path-too-long');
  });
});
