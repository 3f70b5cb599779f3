// The device's health as a report carries it (SPEC §8): fake /proc and /sys trees for the parse cases (missing files,
// garbage, the thermal zone chosen), and the real machine once.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { deviceHealth } from '../../src/agent/device-health.js';

const roots: string[] = [];
afterAll(() => roots.forEach((r) => rmSync(r, { recursive: true, force: true })));

/** A fake tree: path → content, under a new temporary root. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'keystone-health-'));
  roots.push(root);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return root;
}

const MEMINFO =
  'MemTotal:        8000000 kB\nMemFree:          100000 kB\nMemAvailable:    2500000 kB\nBuffers:           12345 kB\n';

describe('device health', () => {
  it('reads uptime, load, MemAvailable and the CPU zone of a board', () => {
    const proc = tree({ uptime: '93784.52 180000.10\n', loadavg: '0.42 0.30 0.25 2/345 6789\n', meminfo: MEMINFO });
    const sys = tree({
      // zone0 is a battery, zone1 the SoC, zone10 another CPU sensor: the first CPU/SoC zone in the kernel's order wins.
      'class/thermal/thermal_zone0/type': 'battery\n',
      'class/thermal/thermal_zone0/temp': '31000\n',
      'class/thermal/thermal_zone10/type': 'cpu-thermal\n',
      'class/thermal/thermal_zone10/temp': '70000\n',
      'class/thermal/thermal_zone2/type': 'soc-thermal\n',
      'class/thermal/thermal_zone2/temp': '48512\n',
      'class/thermal/cooling_device0/type': 'Processor\n',
    });
    expect(deviceHealth({ procRoot: proc, sysRoot: sys })).toEqual({
      uptimeS: 93784,
      load1: 0.42,
      memFreeBytes: 2_500_000 * 1024,
      tempC: 48.5,
    });
  });

  it('no CPU zone: the first zone that reads; an implausible reading (an error code) is passed over', () => {
    const sys = tree({
      'class/thermal/thermal_zone0/type': 'acpitz\n',
      'class/thermal/thermal_zone0/temp': '-273000\n',
      'class/thermal/thermal_zone1/type': 'iwlwifi_1\n',
      'class/thermal/thermal_zone1/temp': '39000\n',
    });
    expect(deviceHealth({ procRoot: tree({}), sysRoot: sys })).toEqual({ tempC: 39 });
  });

  it('missing files and garbage leave their value out, and nothing throws', () => {
    const proc = tree({ uptime: 'not a number\n', loadavg: '', meminfo: 'MemTotal: 1 kB\nMemAvailable: lots\n' });
    const sys = tree({ 'class/thermal/thermal_zone0/temp': 'hot\n', 'class/thermal/thermal_zone1/type': 'cpu\n' });
    expect(deviceHealth({ procRoot: proc, sysRoot: sys, stateDir: join(proc, 'no-such-dir') })).toEqual({});
    expect(deviceHealth({ procRoot: join(proc, 'absent'), sysRoot: join(sys, 'absent') })).toEqual({});
    // A directory where a file should be, and a FIFO (which must not block the read).
    const odd = tree({ 'meminfo/x': '' });
    execFileSync('mkfifo', [join(odd, 'uptime')]);
    expect(deviceHealth({ procRoot: odd, sysRoot: odd })).toEqual({});
  });

  it('disk free is of the state directory', () => {
    const dir = tree({ x: '' });
    const h = deviceHealth({ procRoot: tree({}), sysRoot: tree({}), stateDir: dir });
    const df = execFileSync('df', ['-B1', '--output=avail', dir], { encoding: 'utf8' }).trim().split('\n').at(-1)!;
    expect(h.diskFreeBytes).toBeGreaterThan(0);
    // df and statfs see the same file system; other writers may change it a little between the two reads.
    expect(Math.abs(h.diskFreeBytes! - Number(df)) / Number(df)).toBeLessThan(0.05);
  });

  it('the real machine: uptime, load and memory are there and plausible; temperature where it has a sensor', () => {
    const h = deviceHealth({ stateDir: tmpdir() });
    expect(h.uptimeS).toBeGreaterThan(0);
    expect(h.load1).toBeGreaterThanOrEqual(0);
    expect(h.memFreeBytes).toBeGreaterThan(16 * 1024 * 1024);
    expect(h.diskFreeBytes).toBeGreaterThan(0);
    if (h.tempC !== undefined) expect(h.tempC).toBeGreaterThan(-60);
    expect(
      Object.keys(h).every((k) => ['uptimeS', 'load1', 'memFreeBytes', 'diskFreeBytes', 'tempC'].includes(k)),
    ).toBe(true);
  });
});
