// The device's health as a report carries it (SPEC §8) and the dashboard shows it: uptime, load, memory and disk free,
// and the board's temperature where /sys/class/thermal has a sensor. Read at every report (and every GET
// /v1/revision), inside the outcome's transaction, so it is synchronous and cheap: a few small files and one statfs.
// It never throws: a value the device cannot give (another kernel, a container without /sys, garbage) is left out.
import { closeSync, constants, openSync, readdirSync, readSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import type { DeviceHealth } from '../report/commit-status.js';

export interface DeviceHealthOptions {
  /** Whose file system's free space is reported: the state directory's (where a full disk hurts the agent). */
  stateDir?: string;
  /** Default `/proc`; tests give a fake tree. */
  procRoot?: string;
  /** Default `/sys`; tests give a fake tree. */
  sysRoot?: string;
}

/** Every file read here is a line or a few dozen; more than this is not the file we mean. */
const MAX_FILE_BYTES = 16 * 1024;

/** Zones a board names after its CPU or SoC: the temperature an operator means. Others (a battery, a Wi-Fi chip) only when none is. */
const CPU_ZONE_TYPE = /cpu|soc|x86_pkg|pkg_temp|package|core|arm|bigcore|little/i;

/** What a sensor can honestly say in °C; outside it a zone reports an error code or an unset value (-273, 0x7fffffff …). */
const PLAUSIBLE_C = { min: -60, max: 200 };

export function deviceHealth(o: DeviceHealthOptions = {}): DeviceHealth {
  const proc = o.procRoot ?? '/proc';
  const sys = o.sysRoot ?? '/sys';
  const h: DeviceHealth = {};
  const uptime = firstNumber(readSmall(join(proc, 'uptime')));
  if (uptime !== undefined && uptime >= 0) h.uptimeS = Math.floor(uptime);
  const load = firstNumber(readSmall(join(proc, 'loadavg')));
  if (load !== undefined && load >= 0) h.load1 = load;
  const mem = memAvailable(readSmall(join(proc, 'meminfo')));
  if (mem !== undefined) h.memFreeBytes = mem;
  const disk = o.stateDir === undefined ? undefined : diskFree(o.stateDir);
  if (disk !== undefined) h.diskFreeBytes = disk;
  const temp = temperature(join(sys, 'class', 'thermal'));
  if (temp !== undefined) h.tempC = temp;
  return h;
}

/** The file's first MAX_FILE_BYTES as text; undefined when it cannot be read. O_NONBLOCK: a FIFO planted in a fake tree never blocks. */
function readSmall(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const buf = Buffer.alloc(MAX_FILE_BYTES);
    // /proc files are generated per read: one read call gets them whole (they are far below the buffer).
    const n = readSync(fd, buf, 0, buf.length, null);
    return buf.subarray(0, n).toString('utf8');
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** `12345.67 54321.00` → 12345.67; anything else → undefined. */
function firstNumber(text: string | undefined): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)(?:\s|$)/.exec(text ?? '');
  if (!m) return undefined;
  const v = Number(m[1]);
  return Number.isFinite(v) ? v : undefined;
}

/** `MemAvailable:  123456 kB` in bytes (the kernel's estimate of what can be had without swapping; MemFree undercounts). */
function memAvailable(text: string | undefined): number | undefined {
  const m = /^MemAvailable:\s+(\d+)\s*kB\s*$/m.exec(text ?? '');
  if (!m) return undefined;
  const v = Number(m[1]) * 1024;
  return Number.isSafeInteger(v) ? v : undefined;
}

/** Bytes an unprivileged writer can still use (bavail, not bfree: root's reserve is not the agent's). */
function diskFree(dir: string): number | undefined {
  try {
    const s = statfsSync(dir);
    const v = s.bavail * s.bsize;
    return Number.isSafeInteger(v) && v >= 0 ? v : undefined;
  } catch {
    return undefined;
  }
}

/** °C, one decimal, of the first CPU/SoC zone that reads plausibly, else of the first zone that does. */
function temperature(thermal: string): number | undefined {
  let zones: string[];
  try {
    zones = readdirSync(thermal).filter((n) => /^thermal_zone\d+$/.test(n));
  } catch {
    return undefined;
  }
  // Numeric order: thermal_zone10 after thermal_zone2, so "the first zone" is the kernel's first.
  zones.sort((a, b) => Number(a.slice(12)) - Number(b.slice(12)));
  const read = (zone: string) => {
    const m = /^\s*(-?\d+)\s*$/.exec(readSmall(join(thermal, zone, 'temp')) ?? '');
    if (!m) return undefined;
    const c = Number(m[1]) / 1000;
    return c >= PLAUSIBLE_C.min && c <= PLAUSIBLE_C.max ? Math.round(c * 10) / 10 : undefined;
  };
  const cpu = zones.filter((z) => CPU_ZONE_TYPE.test(readSmall(join(thermal, z, 'type')) ?? ''));
  for (const z of [...cpu, ...zones.filter((z) => !cpu.includes(z))]) {
    const c = read(z);
    if (c !== undefined) return c;
  }
  return undefined;
}
