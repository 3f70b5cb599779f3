// The requirement the emulated package tests name (qemu-arm64, qemu-armhf): read from binfmt_misc's entries, here
// fake ones in a directory of the test's, so that each way a machine can fall short says so and how to fix it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { emulationMissing } from '../support/requirement-checks.js';

const AARCH64_MAGIC = '7f454c460201010000000000000000000200b700';
const ARM_MAGIC = '7f454c4601010100000000000000000002002800';
const MASK = 'ffffffffffffff00fffffffffffffffffeffffff';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A binfmt_misc directory as the kernel shows it, with these entries (name → flags, magic, enabled). */
function binfmt(entries: Record<string, { flags: string; magic: string; enabled?: boolean }>): string {
  dir = mkdtempSync(join(tmpdir(), 'ks-binfmt-'));
  writeFileSync(join(dir, 'status'), 'enabled\n');
  writeFileSync(join(dir, 'register'), '');
  for (const [name, e] of Object.entries(entries)) {
    const interpreter = `/usr/libexec/qemu-binfmt/${name.replace('qemu-', '')}-binfmt-P`;
    writeFileSync(
      join(dir, name),
      `${e.enabled === false ? 'disabled' : 'enabled'}\ninterpreter ${interpreter}\nflags: ${e.flags}\noffset 0\nmagic ${e.magic}\nmask ${MASK}\n`,
    );
  }
  return dir;
}

const version = (v: number | undefined) => () => v;

describe('the qemu requirement of the emulated package tests', () => {
  it('is met natively, whatever binfmt_misc says', () => {
    expect(emulationMissing('arm64', 'arm64', '/nonexistent')).toBeUndefined();
  });

  it('binfmt_misc not mounted: says to mount it and install qemu', () => {
    expect(emulationMissing('arm64', 'amd64', '/nonexistent')).toMatch(
      /^binfmt_misc is not mounted.*mount -t binfmt_misc binfmt_misc .*apt-get install qemu-user-static binfmt-support/,
    );
  });

  it('no entry for the architecture: an entry for the other one does not count', () => {
    const d = binfmt({ 'qemu-arm': { flags: 'POF', magic: ARM_MAGIC } });
    expect(emulationMissing('arm64', 'amd64', d)).toMatch(
      /^no binfmt_misc entry runs arm64 programs here \(apt-get install qemu-user-static binfmt-support/,
    );
    expect(emulationMissing('armhf', 'amd64', d, version(10))).toBeUndefined();
  });

  it('an entry without F (qemu looked up in the container) is not enough; any name with the right header is', () => {
    expect(
      emulationMissing('arm64', 'amd64', binfmt({ 'qemu-aarch64': { flags: 'P', magic: AARCH64_MAGIC } })),
    ).toMatch(/without the F flag: the kernel then looks the interpreter up in the container/);
    expect(
      emulationMissing('arm64', 'amd64', binfmt({ aarch64: { flags: 'PF', magic: AARCH64_MAGIC } })),
    ).toBeUndefined();
  });

  it('a disabled entry says so', () => {
    expect(
      emulationMissing(
        'arm64',
        'amd64',
        binfmt({ 'qemu-aarch64': { flags: 'PF', magic: AARCH64_MAGIC, enabled: false } }),
      ),
    ).toMatch(/qemu-aarch64 for arm64 programs is disabled/);
  });

  it('armhf needs O as well (update-binfmts registers P and F only) and qemu 10 (Debian 12 has 7.2)', () => {
    const pf = binfmt({ 'qemu-arm': { flags: 'PF', magic: ARM_MAGIC } });
    expect(emulationMissing('armhf', 'amd64', pf, version(10))).toMatch(
      /without the O flag: Debian 13's systemd .* \(apt-get install -t bookworm-backports .*systemd-binfmt \/usr\/lib\/binfmt\.d\/qemu-arm\.conf/,
    );
    const pof = binfmt({ 'qemu-arm': { flags: 'POF', magic: ARM_MAGIC } });
    expect(emulationMissing('armhf', 'amd64', pof, version(7))).toMatch(
      /with qemu 7 .*needs qemu 10, as older ones refuse clone\(\) with CLONE_PIDFD/,
    );
    expect(emulationMissing('armhf', 'amd64', pof, version(undefined))).toMatch(/qemu \(of no known version\)/);
    expect(emulationMissing('armhf', 'amd64', pof, version(10))).toBeUndefined();
    // arm64's image (Debian 12, systemd 252) needs neither.
    expect(
      emulationMissing('arm64', 'amd64', binfmt({ 'qemu-aarch64': { flags: 'PF', magic: AARCH64_MAGIC } })),
    ).toBeUndefined();
  });
});
