// Every ELF file in a package is for the package's architecture: a binary of the build machine's that slipped in
// (an addon from node_modules, a Node of the wrong tarball) would install cleanly and fail only on the board.
import { Buffer } from 'node:buffer';
import { closeSync, openSync, readSync } from 'node:fs';
import { relative } from 'node:path';
import { filesUnder } from './deb-control.mjs';
import { archInfo } from './deb-arch.mjs';

const EF_ARM_ABI_FLOAT_HARD = 0x400;

/** The ELF header's class, machine and flags, or undefined for a file that is not ELF. */
export function elfHeader(file) {
  const fd = openSync(file, 'r');
  try {
    const b = Buffer.alloc(52);
    const n = readSync(fd, b, 0, 52, 0);
    if (n < 20 || b.readUInt32BE(0) !== 0x7f454c46) return undefined;
    const little = b[5] === 1;
    const elfClass = b[4];
    const machine = little ? b.readUInt16LE(18) : b.readUInt16BE(18);
    // e_flags: at 36 in a 32-bit header, 48 in a 64-bit one.
    const flagsAt = elfClass === 1 ? 36 : 48;
    const flags = n >= flagsAt + 4 ? (little ? b.readUInt32LE(flagsAt) : b.readUInt32BE(flagsAt)) : 0;
    return { elfClass, machine, flags };
  } finally {
    closeSync(fd);
  }
}

/** Throws naming every ELF file under `root` that is not for `arch`; returns the ELF files found. */
export function checkElfArch(root, arch) {
  const want = archInfo(arch);
  const found = [];
  const wrong = [];
  for (const file of filesUnder(root)) {
    const h = elfHeader(file);
    if (!h) continue;
    const rel = relative(root, file);
    found.push(rel);
    const ok =
      h.elfClass === want.elfClass &&
      h.machine === want.machine &&
      (!want.hardFloat || (h.flags & EF_ARM_ABI_FLOAT_HARD) !== 0);
    if (!ok) wrong.push(`${rel} (ELF class ${h.elfClass}, machine ${h.machine}, flags 0x${h.flags.toString(16)})`);
  }
  if (wrong.length)
    throw new Error(
      `not ${arch} (ELF class ${want.elfClass}, machine ${want.machine}${want.hardFloat ? ', hard-float' : ''}): ${wrong.join(', ')}`,
    );
  return found;
}
