// `keystonectl enroll` end to end, through the built bin/keystonectl.js (run `npm run build` first) as an operator
// runs it: a key from `keystonectl keygen --no-password`, the device's identity piped in, the certificate written
// under devices/, checked with `--check` and by the real minisign; and the refusals, each exit 2 with its code.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCertificate, reportKeyLine } from '../../src/identity/certificate.js';
import { reportKeyId } from '../../src/identity/report-signature.js';
import { formatPublicKey } from '../../src/trust/minisign.js';
import { runCtl } from '../support/cli-run.js';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { needs } from '../support/requirements.js';
import { AGE, GW1, GW1_NEW, identityOf, OTHER } from '../identity/identity-fixture.js';

const BIN = join(PROJECT_ROOT, 'bin/keystonectl.js');
let dir: string; // the operator's checkout of the fleet repository; the enrolment key beside it, in keys/

function ctl(args: string[], input = '', env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd: dir,
    input,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const gw1 = JSON.stringify({ ...identityOf('gw-1'), extra: 'ignored' }) + '\n';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'keystone-enroll-'));
  mkdirSync(join(dir, 'keys'));
  const r = ctl(['keygen', '--out', 'keys/enroll', '--no-password']);
  expect(r.code, r.stderr).toBe(0);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('keystonectl enroll', { timeout: 60_000 }, () => {
  it('writes devices/gw-1.cert from the identity on stdin, with labels, and says what to do next', () => {
    const r = ctl(
      ['enroll', '--key', 'keys/enroll.key', '--identity', '-', '--label', 'site=berlin', '--label', 'role=gateway'],
      gw1,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      `enrolled gw-1: report key ${reportKeyId(GW1.keyId)}, age recipient ${AGE}, role=gateway, site=berlin`,
    );
    expect(r.stdout).toContain('certificate: devices/gw-1.cert');
    expect(r.stdout).toContain('next: commit devices/gw-1.cert; it need not be in SHA256SUMS');
    expect(r.stdout).toContain('--enrollment-key keys/enroll.pub');
    const text = readFileSync(join(dir, 'devices/gw-1.cert'), 'utf8');
    expect(statSync(join(dir, 'devices/gw-1.cert')).mode & 0o777).toBe(0o644);
    const { cert } = parseCertificate(text, 'devices/gw-1.cert');
    expect(cert).toMatchObject({
      device: 'gw-1',
      reportKeyText: reportKeyLine(GW1),
      ageRecipient: AGE,
      labels: { site: 'berlin', role: 'gateway' },
    });
    expect(cert.expiresAt).toBeUndefined();
    expect(Math.abs(cert.issuedAt - Date.now())).toBeLessThan(60_000);
  });

  it('--check: exit 0 and a summary; exit 2 with the code for another key, another device, a revoked one', () => {
    const ok = ctl([
      'enroll',
      '--check',
      'devices/gw-1.cert',
      '--enrollment-key',
      'keys/enroll.pub',
      '--device',
      'gw-1',
    ]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('devices/gw-1.cert: a valid certificate of gw-1');
    expect(ok.stdout).toMatch(/labels +role=gateway, site=berlin/);
    expect(ok.stdout).toMatch(/expires +never/);
    const json = JSON.parse(
      ctl(['enroll', '--check', 'devices/gw-1.cert', '--enrollment-key', 'keys/enroll.pub', '--json']).stdout,
    );
    expect(json).toMatchObject({
      ok: true,
      device: 'gw-1',
      reportKeyId: reportKeyId(GW1.keyId),
      ageRecipient: AGE,
      expires: null,
    });

    writeFileSync(join(dir, 'keys/other.pub'), formatPublicKey(OTHER));
    const unknown = ctl(['enroll', '--check', 'devices/gw-1.cert', '--enrollment-key', 'keys/other.pub']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(
      /^keystonectl enroll: refused: devices\/gw-1\.cert: signed by key [0-9A-F]+, which is not a trusted enrolment key .*\[KS_CERT_UNKNOWN_KEY\]\n$/,
    );
    // Either key trusted: it counts.
    expect(
      ctl([
        'enroll',
        '--check',
        'devices/gw-1.cert',
        '--enrollment-key',
        'keys/other.pub',
        '--enrollment-key',
        'keys/enroll.pub',
      ]).code,
    ).toBe(0);

    const wrong = ctl([
      'enroll',
      '--check',
      'devices/gw-1.cert',
      '--enrollment-key',
      'keys/enroll.pub',
      '--device',
      'gw-2',
      '--json',
    ]);
    expect(wrong.code).toBe(2);
    expect(JSON.parse(wrong.stdout).error).toMatchObject({ code: 'KS_CERT_WRONG_DEVICE', file: 'devices/gw-1.cert' });

    writeFileSync(join(dir, 'devices/revoked.toml'), '[[revoked]]\ndevice = "gw-1"\nreason = "stolen 2026-12-01"\n');
    const revoked = ctl([
      'enroll',
      '--check',
      'devices/gw-1.cert',
      '--enrollment-key',
      'keys/enroll.pub',
      '--revoked',
      'devices/revoked.toml',
    ]);
    expect(revoked.code).toBe(2);
    expect(revoked.stderr).toContain('is revoked: stolen 2026-12-01 [KS_CERT_REVOKED]');
    writeFileSync(join(dir, 'devices/revoked.toml'), '[[revoked]]\ndevise = "gw-1"\n');
    const broken = ctl([
      'enroll',
      '--check',
      'devices/gw-1.cert',
      '--enrollment-key',
      'keys/enroll.pub',
      '--revoked',
      'devices/revoked.toml',
    ]);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain('devices/revoked.toml:2: revoked[0].devise: unknown key "devise"');
    expect(broken.stderr).toContain('[KS_REVOCATIONS_INVALID]');
    rmSync(join(dir, 'devices/revoked.toml'));

    writeFileSync(
      join(dir, 'tampered.cert'),
      readFileSync(join(dir, 'devices/gw-1.cert'), 'utf8').replace('berlin', 'bernin'),
    );
    const tampered = ctl(['enroll', '--check', 'tampered.cert', '--enrollment-key', 'keys/enroll.pub']);
    expect(tampered.code).toBe(2);
    expect(tampered.stderr).toContain('tampered.cert: the signature by enrolment key');
    expect(tampered.stderr).toContain('[KS_CERT_BAD_SIGNATURE]');
  });

  it('refuses to overwrite a certificate without --force; with it, replaces it (the device reinstalled, a new key)', () => {
    const again = ctl(['enroll', '--key', 'keys/enroll.key', '--identity', '-'], gw1);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('exists; pass --force');
    const reinstalled = JSON.stringify(identityOf('gw-1', GW1_NEW));
    const forced = ctl(['enroll', '--key', 'keys/enroll.key', '--identity', '-', '--force', '--json'], reinstalled);
    expect(forced.code, forced.stderr).toBe(0);
    expect(JSON.parse(forced.stdout)).toMatchObject({
      device: 'gw-1',
      reportKey: reportKeyLine(GW1_NEW),
      out: join(dir, 'devices/gw-1.cert'),
      labels: {},
    });
  });

  it('reads the identity from a file, a whole minisign.pub as the report key too; --out and --expires', () => {
    writeFileSync(
      join(dir, 'gw-2.json'),
      JSON.stringify({ device: 'gw-2', reportKey: formatPublicKey(GW1_NEW), ageRecipient: AGE }),
    );
    const r = ctl([
      'enroll',
      '--key',
      'keys/enroll.key',
      '--identity',
      'gw-2.json',
      '--out',
      'gw-2.cert',
      '--expires',
      '365d',
      '--json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(Date.parse(out.expires) - Date.parse(out.issued)).toBe(365 * 86_400_000);
    expect(parseCertificate(readFileSync(join(dir, 'gw-2.cert'), 'utf8'), 'gw-2.cert').cert.reportKeyText).toBe(
      reportKeyLine(GW1_NEW),
    );
    const dated = ctl([
      'enroll',
      '--key',
      'keys/enroll.key',
      '--identity',
      'gw-2.json',
      '--out',
      'gw-2b.cert',
      '--expires',
      '2099-01-01',
      '--json',
    ]);
    expect(JSON.parse(dated.stdout).expires).toBe('2099-01-01T00:00:00Z');
    for (const bad of ['yesterday', '2001-01-01', '-1h', '0s']) {
      const e = ctl([
        'enroll',
        '--key',
        'keys/enroll.key',
        '--identity',
        'gw-2.json',
        '--out',
        'gw-2c.cert',
        '--expires',
        bad,
      ]);
      expect(e.code, bad).toBe(2);
      expect(e.stderr, bad).toContain('--expires');
    }
    expect(existsSync(join(dir, 'gw-2c.cert'))).toBe(false);
  });

  it('refuses a malformed identity with exit 2 and KS_IDENTITY_MALFORMED, writing nothing', () => {
    const cases: Record<string, string> = {
      'not JSON': 'device=gw-5\n',
      'no age recipient': JSON.stringify({ device: 'gw-5', reportKey: reportKeyLine(GW1) }),
      'a report key that is no key': JSON.stringify({ ...identityOf('gw-5'), reportKey: 'RWQnope' }),
      'an age recipient with a typo': JSON.stringify({ ...identityOf('gw-5'), ageRecipient: AGE.slice(0, -1) + 'q' }),
      'a device name of two words': JSON.stringify(identityOf('gw 5')),
      'an array': '[]',
    };
    for (const [what, input] of Object.entries(cases)) {
      const r = ctl(['enroll', '--key', 'keys/enroll.key', '--identity', '-'], input);
      expect(r.code, what).toBe(2);
      expect(r.stderr, what).toMatch(
        /^keystonectl enroll: refused: stdin: not a device identity: .*\[KS_IDENTITY_MALFORMED\]\n$/,
      );
    }
    expect(existsSync(join(dir, 'devices/gw-5.cert'))).toBe(false);
  });

  it('refuses bad flags with exit 2 and the usage', () => {
    for (const args of [
      ['enroll', '--identity', '-'],
      ['enroll', '--key', 'keys/enroll.key'],
      ['enroll', '--key', 'keys/enroll.key', '--identity', '-', '--label', 'bad key=x'],
      ['enroll', '--check', 'devices/gw-1.cert'],
      ['enroll', '--check', 'devices/gw-1.cert', '--enrollment-key', 'keys/enroll.pub', '--key', 'keys/enroll.key'],
      ['enroll', '--key', 'keys/enroll.key', '--identity', 'missing.json'],
    ]) {
      const r = ctl(args, gw1);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toContain('usage: keystonectl enroll');
    }
    const noDefault = ctl(
      ['enroll', '--key', 'keys/enroll.key', '--identity', '-'],
      JSON.stringify(identityOf('site/gw-1')),
    );
    expect(noDefault.code).toBe(2);
    expect(noDefault.stderr).toContain('cannot be a file name: give --out FILE');
  });

  it('enrols what the real `keystone identity` printed, as JSON and as its text form alike', () => {
    const state = join(dir, 'device-state');
    const keystone = (args: string[]) =>
      spawnSync(
        process.execPath,
        [join(PROJECT_ROOT, 'bin/keystone.js'), 'identity', '--state-dir', state, '--device', 'gw-8', ...args],
        { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } },
      );
    const asJson = keystone(['--json']);
    expect(asJson.status, asJson.stderr).toBe(0);
    const asText = keystone([]);
    expect(asText.status, asText.stderr).toBe(0);
    const fromJson = ctl(
      ['enroll', '--key', 'keys/enroll.key', '--identity', '-', '--out', 'gw-8-json.cert', '--json'],
      asJson.stdout,
    );
    expect(fromJson.code, fromJson.stderr).toBe(0);
    const fromText = ctl(
      ['enroll', '--key', 'keys/enroll.key', '--identity', '-', '--out', 'gw-8-text.cert', '--json'],
      asText.stdout,
    );
    expect(fromText.code, fromText.stderr).toBe(0);
    const device = JSON.parse(asJson.stdout) as {
      device: string;
      reportKey: string;
      reportKeyId: string;
      ageRecipient: string;
    };
    for (const out of [JSON.parse(fromJson.stdout), JSON.parse(fromText.stdout)])
      expect(out).toMatchObject({
        device: 'gw-8',
        reportKey: device.reportKey,
        reportKeyId: device.reportKeyId,
        ageRecipient: device.ageRecipient,
      });
    // The text form with a line missing is refused like a malformed JSON identity.
    const cut = ctl(
      ['enroll', '--key', 'keys/enroll.key', '--identity', '-', '--out', 'gw-8-cut.cert'],
      asText.stdout.replace(/^age recipient.*$/m, ''),
    );
    expect(cut.code).toBe(2);
    expect(cut.stderr).toContain('no "age recipient" line');
  });

  it('in-process: the identity from the injected stdin, the time from the injected clock', async () => {
    const now = Date.parse('2026-12-04T10:00:00Z');
    const r = await runCtl(
      ['enroll', '--key', 'keys/enroll.key', '--identity', '-', '--out', 'in-process.cert', '--json'],
      dir,
      {
        stdin: Readable.from([Buffer.from(JSON.stringify(identityOf('gw-7')))]) as unknown as NodeJS.ReadStream,
        now: () => now,
      },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ device: 'gw-7', issued: '2026-12-04T10:00:00Z' });
  });
});

const minisign = needs('minisign');
describe.skipIf(minisign.skip)(minisign.title('keystonectl enroll: minisign checks what it wrote'), () => {
  it('verifies devices/gw-1.cert with the lines docs/fleets.md gives operators', () => {
    const r = ctl(
      ['enroll', '--key', 'keys/enroll.key', '--identity', '-', '--label', 'site=lab', '--force'],
      JSON.stringify(identityOf('gw-1')),
    );
    expect(r.code, r.stderr).toBe(0);
    const docs = readFileSync(join(PROJECT_ROOT, 'docs/fleets.md'), 'utf8');
    const section = docs.slice(docs.indexOf('## Device identity'));
    const script = section
      .split('\n')
      .filter((l) => /^(awk '\/\^-----|minisign -V )/.test(l))
      .map((l) => l.replace('~/enroll.pub', 'keys/enroll.pub'));
    expect(script).toHaveLength(3);
    const out = execFileSync('sh', ['-ec', script.join('\n')], { cwd: dir, encoding: 'utf8', stdio: 'pipe' });
    expect(out).toContain('Signature and comment signature verified');
    expect(out).toMatch(/Trusted comment: timestamp:\d+ device=gw-1/);
  });
});
