// The two parts of the package's name that come from outside the tree: the Debian version (package.json's, or an
// override for a test's upgrade or a CI build number) and the architecture (dpkg's, which must be the bundled Node's).
import { execFileSync } from 'node:child_process';
import process from 'node:process';

/** process.arch → the Debian architectures a Node built for it runs on (arm: hard-float or soft-float, dpkg says). */
const DEBIAN_ARCHES = {
  x64: ['amd64'],
  arm64: ['arm64'],
  arm: ['armhf', 'armel'],
  ia32: ['i386'],
  ppc64: ['ppc64el'],
  s390x: ['s390x'],
  riscv64: ['riscv64'],
  loong64: ['loong64'],
};

/**
 * An npm version as a Debian one: a pre-release must sort before its release (`1.2.0-rc.1` < `1.2.0`), which in
 * Debian is the tilde (`1.2.0~rc.1`); a hyphen would instead start a Debian revision. Build metadata (`+b7`) sorts
 * after, as in Debian. Anything else Debian would misread is refused rather than guessed.
 */
export function debianVersion(version) {
  const text = String(version).trim();
  const m = /^(\d+\.\d+\.\d+)(?:-([0-9A-Za-z.-]+))?(\+[0-9A-Za-z.+]+)?$/.exec(text);
  const deb = m ? `${m[1]}${m[2] ? `~${m[2].replaceAll('-', '.')}` : ''}${m[3] ?? ''}` : text;
  if (!/^[0-9][0-9A-Za-z.+~]*$/.test(deb)) throw new Error(`"${text}" cannot be a Debian version: use digits, letters, ".", "+" and "~" (e.g. 0.2.0, 0.2.0~rc.1, 0.2.0+build.7)`);
  return deb;
}

/** dpkg's architecture, checked against the Node that will be bundled: the package carries that very binary. */
export function debianArch(nodeArch = process.arch) {
  const arch = execFileSync('dpkg', ['--print-architecture'], { encoding: 'utf8' }).trim();
  const fits = DEBIAN_ARCHES[nodeArch] ?? [];
  if (!fits.includes(arch))
    throw new Error(`dpkg builds for ${arch}, but the Node running this build (${process.execPath}) is ${nodeArch}: build on a ${arch} machine with a ${arch} Node, or with the ${fits[0] ?? nodeArch} dpkg`);
  return arch;
}
