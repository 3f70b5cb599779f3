// `keystone identity` (SPEC §15), the real program (bin/keystone.js from dist/): the device's name and the public halves
// of its keys, made on a device that has none yet (so it can be enrolled before its first start) and read unchanged
// afterwards, from the flags or the agent's configuration file; refused (exit 2) when the keys are unsafe.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAgentFlags } from '../../src/cli/agent-flags.js';
import { parseAgentOptions } from '../../src/cli/agent-options.js';
import { agentSettings } from '../../src/cli/agent-settings.js';
import type { CliIo } from '../../src/cli/io.js';
import { checkAgentFiles, trustedFilesOf } from '../../src/cli/trusted-files.js';
import { identityPaths, readDevicePublicIdentity } from '../../src/identity/device-keys.js';
import { TrustedFileError } from '../../src/runtime/trusted-file.js';
import { formatPublicKey, generateKey } from '../../src/trust/minisign.js';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { snapshot } from '../doctor/doctor-fixtures.js';

const KEYSTONE = join(PROJECT_ROOT, 'bin', 'keystone.js');
let root: string;
let n = 0;
const freshState = () => join(root, `state${++n}`);

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'keystone-identity-'));
  chmodSync(root, 0o755);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function keystone(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [KEYSTONE, ...args], { cwd: root, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('keystone identity', () => {
  it('--json: makes the keys on a device that has none, then prints the same public halves without writing anything', async () => {
    const stateDir = freshState();
    const first = keystone(['identity', '--json', '--state-dir', stateDir, '--device', 'gw-1']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toBe(`created the device's keys in ${identityPaths(stateDir).dir}\n`);
    const printed = JSON.parse(first.stdout) as Record<string, string>;
    expect(Object.keys(printed)).toEqual(['device', 'reportKey', 'reportKeyId', 'ageRecipient']);
    const id = (await readDevicePublicIdentity(stateDir))!;
    expect(printed).toEqual({
      device: 'gw-1',
      reportKey: id.reportKey,
      reportKeyId: id.reportKeyId,
      ageRecipient: id.ageRecipient,
    });
    expect(printed.reportKey).toBe(readFileSync(identityPaths(stateDir).reportPub, 'utf8').split('\n')[1]);
    expect(first.stdout).not.toMatch(/SECRET/i);

    const before = snapshot(stateDir);
    const again = keystone(['identity', '--json', '--state-dir', stateDir, '--device', 'gw-1']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toBe('');
    expect(JSON.parse(again.stdout)).toEqual(printed);
    expect(snapshot(stateDir)).toEqual(before);
  });

  it('the text form, and the name and state directory taken from the agent configuration file', () => {
    const stateDir = freshState();
    const config = join(root, 'agent.toml');
    writeFileSync(
      config,
      `dir = ${JSON.stringify(root)}\nallow-unsigned = true\ndevice = "edge-7"\nstate-dir = ${JSON.stringify(stateDir)}\n`,
      { mode: 0o600 },
    );
    const r = keystone(['identity', '--config', config]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toBe('device         edge-7');
    expect(lines[1]).toMatch(/^report key {5}RW[A-Za-z0-9+/]{54} {3}\(id [0-9a-f]{16}\)$/);
    expect(lines[2]).toMatch(/^age recipient {2}age1[0-9a-z]{58}$/);
    expect(r.stdout).toContain('keystonectl enroll --key ENROLL.key --identity edge-7.identity.json');
    // A flag still wins over the file.
    const json = JSON.parse(keystone(['identity', '--config', config, '--device', 'edge-8', '--json']).stdout) as {
      device: string;
      ageRecipient: string;
    };
    expect(json.device).toBe('edge-8');
    expect(lines[2]).toContain(json.ageRecipient);
  });

  it('refuses (exit 2) a report key others can read, naming the file and the chmod; a bad device name is a usage error', () => {
    const stateDir = freshState();
    expect(keystone(['identity', '--state-dir', stateDir, '--device', 'gw-2']).code).toBe(0);
    const key = identityPaths(stateDir).reportKey;
    chmodSync(key, 0o644);
    const r = keystone(['identity', '--json', '--state-dir', stateDir, '--device', 'gw-2']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`keystone identity: refused: ${key} can be read or written by other users (mode 0644)`);
    expect(r.stderr).toContain(`chmod 600 ${key}`);
    expect(r.stderr).toContain('[KS_IDENTITY_UNSAFE]');

    const bad = keystone(['identity', '--state-dir', stateDir, '--device', 'gw 2']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--device:');
    expect(bad.stderr).toContain('usage: keystone identity');
  });
});

describe("the agent's --enrollment-key and --certificate", () => {
  const io = (): CliIo => ({ stdout: { write: () => true }, stderr: { write: () => true }, cwd: root, env: {} });
  const settingsOf = (args: string[]) => {
    const argv = ['--dir', root, '--allow-unsigned', ...args];
    const parsed = parseAgentOptions(argv, io());
    return { values: parsed.values, settings: agentSettings(checkAgentFlags(argv, parsed, io()), io()) };
  };

  it('reads the enrolment keys (parsed) and the certificate (its text) for run.identity; the keys are trusted files', () => {
    const key = generateKey((n) => new Uint8Array(n).fill(9));
    writeFileSync(join(root, 'enroll.pub'), formatPublicKey(key));
    writeFileSync(join(root, 'gw-1.cert'), 'a certificate\n');
    const { values, settings } = settingsOf(['--enrollment-key', 'enroll.pub', '--certificate', 'gw-1.cert']);
    expect(settings.enrollment).toEqual({
      enrollmentKeys: [{ file: join(root, 'enroll.pub'), key: { keyId: key.keyId, publicKey: key.publicKey } }],
      certificate: { file: join(root, 'gw-1.cert'), text: 'a certificate\n' },
    });
    expect(settingsOf([]).settings.enrollment).toEqual({ enrollmentKeys: [] });
    expect(trustedFilesOf(values, io())).toContainEqual({
      path: join(root, 'enroll.pub'),
      role: 'trusted-key',
      what: 'enrollment-key',
    });
    // Another user could change it: refused as a trusted key is.
    chmodSync(join(root, 'enroll.pub'), 0o666);
    expect(() => checkAgentFiles(trustedFilesOf(values, io()))).toThrow(TrustedFileError);
    chmodSync(join(root, 'enroll.pub'), 0o644);
  });

  it('refuses an enrolment key that is not a key, and a certificate over 16 KiB', () => {
    writeFileSync(join(root, 'junk.pub'), 'not a key\n');
    expect(() => settingsOf(['--enrollment-key', 'junk.pub'])).toThrow(
      `--enrollment-key ${join(root, 'junk.pub')} is not a minisign public key`,
    );
    writeFileSync(join(root, 'big.cert'), 'x'.repeat(16 * 1024 + 1));
    expect(() => settingsOf(['--certificate', 'big.cert'])).toThrow(
      'is 16385 bytes, more than a certificate can be (16384)',
    );
  });

  it('refuses one key as both a release key and the enrolment key', () => {
    const key = generateKey((n) => new Uint8Array(n).fill(5));
    writeFileSync(join(root, 'both.pub'), formatPublicKey(key));
    const parse = (args: string[]) => {
      const argv = ['--dir', root, ...args];
      return agentSettings(checkAgentFlags(argv, parseAgentOptions(argv, io()), io()), io());
    };
    expect(() => parse(['--trusted-key', 'both.pub', '--enrollment-key', 'both.pub'])).toThrow(
      /--enrollment-key .*both\.pub is also a --trusted-key/,
    );
    writeFileSync(join(root, 'other.pub'), formatPublicKey(generateKey((n) => new Uint8Array(n).fill(6))));
    expect(
      parse(['--trusted-key', 'other.pub', '--enrollment-key', 'both.pub']).enrollment.enrollmentKeys,
    ).toHaveLength(1);
  });
});
