// The architectures a package is made for: Debian's name, Node's, the ELF header its binaries carry, and the cross
// toolchain (Debian's g++-<triplet>) that builds its native addon on another machine.
import process from 'node:process';

/** @type {Record<string, { node: string, gyp: string, elfClass: 1 | 2, machine: number, hardFloat?: boolean, triplet: string }>} */
export const ARCHES = {
  // e_machine: EM_X86_64 62, EM_AARCH64 183, EM_ARM 40; EI_CLASS 1 = 32-bit, 2 = 64-bit.
  amd64: { node: 'x64', gyp: 'x64', elfClass: 2, machine: 62, triplet: 'x86_64-linux-gnu' },
  arm64: { node: 'arm64', gyp: 'arm64', elfClass: 2, machine: 183, triplet: 'aarch64-linux-gnu' },
  // armhf: ARMv7, hard-float calling convention (EF_ARM_ABI_FLOAT_HARD in e_flags): Debian's and Raspberry Pi OS's.
  armhf: { node: 'arm', gyp: 'arm', elfClass: 1, machine: 40, hardFloat: true, triplet: 'arm-linux-gnueabihf' },
};

export function archInfo(arch) {
  const info = ARCHES[arch];
  if (!info) throw new Error(`--arch takes ${Object.keys(ARCHES).join(', ')}, not "${arch}"`);
  return info;
}

/** Debian's name for the machine building (and for the Node running this build). */
export function hostArch() {
  const found = Object.entries(ARCHES).find(([, a]) => a.node === process.arch);
  if (!found) throw new Error(`this machine's Node is ${process.arch}: packages are built on amd64, arm64 or armhf`);
  return found[0];
}
