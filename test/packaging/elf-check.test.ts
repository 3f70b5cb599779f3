// The package's architecture checks, on files of this machine: every ELF file must be for the package's
// architecture (a build machine's binary in an arm64 package fails the build, naming it), and the Depends of a
// foreign binary come from its NEEDED entries and symbol versions.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hostArch } from '../../packaging/deb-arch.mjs';
import { foreignLibraryDepends } from '../../packaging/deb-control.mjs';
import { checkElfArch, elfHeader } from '../../packaging/elf-check.mjs';

const work = mkdtempSync(join(tmpdir(), 'ks-elf-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function stagedRoot(): string {
  const root = mkdtempSync(join(work, 'root-'));
  mkdirSync(join(root, 'usr', 'lib', 'keystone', 'native'), { recursive: true });
  copyFileSync(process.execPath, join(root, 'usr', 'lib', 'keystone', 'native', 'stray.node'));
  writeFileSync(join(root, 'usr', 'lib', 'keystone', 'keystone.mjs'), 'export {};\n');
  writeFileSync(join(root, 'short'), '\x7fEL');
  return root;
}

describe('checkElfArch', () => {
  it('passes a tree whose ELF files are all for its architecture, and lists them', () => {
    expect(checkElfArch(stagedRoot(), hostArch())).toEqual(['usr/lib/keystone/native/stray.node']);
  });

  it("fails naming the file that is another architecture's, with what its header says", () => {
    const other = hostArch() === 'arm64' ? 'amd64' : 'arm64';
    expect(() => checkElfArch(stagedRoot(), other)).toThrow(
      new RegExp(`^not ${other} .*: usr/lib/keystone/native/stray\\.node \\(ELF class 2, machine \\d+`),
    );
    expect(() => checkElfArch(stagedRoot(), 'armhf')).toThrow(
      /ELF class 1, machine 40, hard-float\): usr\/lib\/keystone\/native\/stray\.node/,
    );
  });

  it("reads the header of this machine's node as this machine's", () => {
    const h = elfHeader(process.execPath);
    expect(h?.elfClass).toBe(2);
    expect(h?.machine).toBe(process.arch === 'x64' ? 62 : process.arch === 'arm64' ? 183 : h?.machine);
    expect(elfHeader(join(stagedRoot(), 'short'))).toBeUndefined();
  });
});

// readelf is binutils', which the machine's compiler (node-gyp, npm ci) brings.
describe('foreignLibraryDepends', () => {
  it("maps a binary's NEEDED libraries to packages, libc6 at its newest GLIBC_ version", () => {
    const deps = foreignLibraryDepends([process.execPath]);
    expect(deps).toMatch(/(^|, )libc6 \(>= 2\.\d+\)/);
    // Sorted, comma-separated package names.
    const names = deps.split(', ').map((d) => d.split(' ')[0]);
    expect(names).toEqual([...names].sort());
  });

  it('fails on a library no Depends provides (git needs zlib and PCRE)', () => {
    const git = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
    expect(() => foreignLibraryDepends([git])).toThrow(
      /needs lib(pcre2-8|z)\.so\.\d, which no Depends of this package provides/,
    );
  });
});
