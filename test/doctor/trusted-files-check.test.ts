// The trusted-files check (issue 28, finding 6): every file the agent would trust, and the API token it made, such that
// no other user could change it nor read a secret; each failure named with the chmod or chown that fixes it.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkTrustedFiles } from '../../src/doctor/trusted-files-check.js';
import type { TrustedFileRef } from '../../src/runtime/trusted-file.js';
import { scratch, type Scratch } from './doctor-fixtures.js';

let s: Scratch;
beforeAll(() => {
  s = scratch();
});
afterAll(() => s.cleanup());

function file(name: string, mode: number): string {
  const path = join(s.dir, name);
  writeFileSync(path, 'x\n');
  chmodSync(path, mode);
  return path;
}

const unsigned = { unsigned: true, keyFiles: [] };

describe('trusted-files', () => {
  it('fails every file another user could change or, for a secret, read: each named, each fix given', () => {
    const config = file('agent.toml', 0o664);
    const key = file('release.pub', 0o666);
    const token = file('git-token', 0o644);
    mkdirSync(s.stateDir, { mode: 0o711 });
    const apiToken = file('state/api-token', 0o640);
    const trustedFiles: TrustedFileRef[] = [
      { path: config, role: 'config', what: 'the configuration file' },
      { path: key, role: 'trusted-key', what: 'trusted-key' },
      { path: token, role: 'secret', what: 'git-token-file' },
    ];
    const r = checkTrustedFiles({ trustedFiles, trust: unsigned, stateDir: s.stateDir });
    expect(r).toMatchObject({ check: 'trusted-files', status: 'fail', code: 'KS_CONFIG_UNSAFE' });
    expect(r.detail.split('; ')).toEqual([
      `${config} is writable by other users (mode 0664)`,
      `${key} is writable by other users (mode 0666)`,
      `${token} is readable by other users (mode 0644), and so is the secret in it`,
      `${apiToken} is readable by other users (mode 0640), and so is the secret in it`,
    ]);
    expect(r.fix).toBe(`chmod go-w ${config}; chmod go-w ${key}; chmod 600 ${token}; chmod 600 ${apiToken}`);

    for (const [path, mode] of [
      [config, 0o640],
      [key, 0o644],
      [token, 0o600],
      [apiToken, 0o600],
    ] as const)
      chmodSync(path, mode);
    const fixed = checkTrustedFiles({ trustedFiles, trust: unsigned, stateDir: s.stateDir });
    expect(fixed).toMatchObject({ status: 'pass' });
    expect(fixed.detail).toContain(`trusted key ${key}`);
    expect(fixed.detail).toContain(`the API token ${apiToken}`);
  });

  it('without the CLI’s list, checks the setup’s trusted keys; with nothing to check, skips', () => {
    const key = file('other.pub', 0o646);
    expect(
      checkTrustedFiles({ trust: { unsigned: false, keyFiles: [key] }, stateDir: join(s.dir, 'none') }),
    ).toMatchObject({ status: 'fail', code: 'KS_TRUSTED_KEY_UNSAFE', fix: `chmod go-w ${key}` });
    expect(checkTrustedFiles({ trust: unsigned, stateDir: join(s.dir, 'none') })).toMatchObject({ status: 'skip' });
  });
});
