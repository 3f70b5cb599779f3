// `keystone floor`: shows the replay floor, and lowers it on the device (never raises it), refusing while another
// connection (a running agent) has the state database open. A real state store, in-process commands.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/keystone.js';
import type { CliIo } from '../../src/cli/io.js';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import { openStateStore } from '../../src/store/state-store.js';
import { buildKeyring } from '../../src/trust/keyring.js';
import { TrustError } from '../../src/trust/trust-error.js';
import { verifyRevision } from '../../src/trust/verify-revision.js';
import { exampleRepo, type ExampleRepo } from '../support/example-repo.js';

/** 2100-01-01T00:00:00Z: what an agent without the clock-skew check applied. */
const YEAR_2100 = 4_102_444_800;

let stateDir: string;
let repo: ExampleRepo;
beforeEach(async () => {
  stateDir = mkdtempSync(join(tmpdir(), 'keystone-floor-'));
  repo = await exampleRepo();
});
afterEach(() => {
  rmSync(stateDir, { recursive: true, force: true });
  repo.cleanup();
});

async function keystone(args: string[], now = Date.now()): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    cwd: '/',
    env: {},
    now: () => now,
  };
  const code = await main(args, io, { once: () => {} });
  return { code, stdout, stderr };
}

/** The state of a device whose agent applied a revision signed at `signedAt`. */
function applied(signedAt: number): void {
  const s = openStateStore(stateDir);
  s.setAppliedRevision({
    id: 'dir:poisoned',
    source: 'dir',
    planFile: 'plans/edge.toml',
    signedAt,
    unsigned: false,
    appliedAt: Date.now(),
  });
  s.close();
}
const floor = () => {
  const s = openStateStore(stateDir);
  try {
    return s.lastSignedAt();
  } finally {
    s.close();
  }
};
const repoSignedAt = () =>
  Number(/timestamp:(\d+)/.exec(readFileSync(join(repo.dir, 'SHA256SUMS.minisig'), 'utf8'))![1]);

/** What the agent does with the revision: verify it against the store's floor. */
async function agentVerify(): Promise<unknown> {
  const keyring = buildKeyring([{ source: 'test.pub', text: readFileSync(repo.trust[1]!, 'utf8') }]);
  const notBefore = floor();
  return verifyRevision(new DirectoryReader(repo.dir), {
    keyring,
    now: Math.floor(Date.now() / 1000),
    ...(notBefore !== undefined && { notBefore }),
  }).catch((e: unknown) => e);
}

describe('keystone floor', () => {
  it('after a floor poisoned by a signature from 2100, an honest signature is refused; after --reset --to, it is accepted', async () => {
    applied(YEAR_2100);
    expect(((await agentVerify()) as TrustError).code).toBe('KS_SIGNATURE_REPLAYED');

    const shown = await keystone(['floor', '--state-dir', stateDir]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('replay floor: 2100-01-01T00:00:00.000Z');
    expect(shown.stdout).toContain('applied revision: dir:poisoned');
    expect(shown.stdout).toMatch(/later than this device's clock.*\n.*keystone floor --reset/);

    const to = new Date(repoSignedAt() * 1000).toISOString();
    const reset = await keystone(['floor', '--state-dir', stateDir, '--reset', '--to', to]);
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stdout).toContain(`replay floor lowered from 2100-01-01T00:00:00.000Z to ${to}`);
    expect(floor()).toBe(repoSignedAt());
    expect(await agentVerify()).toMatchObject({ signedAt: repoSignedAt() });
  });

  it('--reset without --to lowers the floor to the device clock: an older signature needs signing again', async () => {
    applied(YEAR_2100);
    const now = Date.now();
    const r = await keystone(['floor', '--state-dir', stateDir, '--reset', '--json'], now);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      lowered: true,
      previousFloor: YEAR_2100,
      floor: Math.floor(now / 1000),
      inFuture: false,
    });
    // The example repository was signed a day ago: still older than the floor.
    expect(((await agentVerify()) as TrustError).code).toBe('KS_SIGNATURE_REPLAYED');
  });

  it('never raises the floor, nor lowers it into the future or from a clock that was never set', async () => {
    applied(1_700_000_000);
    const same = await keystone(['floor', '--state-dir', stateDir, '--reset', '--to', '2024-01-01T00:00:00Z']);
    expect(same.code).toBe(0);
    expect(same.stdout).toMatch(/is not after 2024-01-01T00:00:00.000Z: nothing changed/);
    expect(floor()).toBe(1_700_000_000);
    const future = await keystone(['floor', '--state-dir', stateDir, '--reset', '--to', '2100-01-01T00:00:00Z']);
    expect(future.code).toBe(2);
    expect(future.stderr).toMatch(/later than this device's clock/);
    const unset = await keystone(['floor', '--state-dir', stateDir, '--reset'], 120_000);
    expect(unset.code).toBe(2);
    expect(unset.stderr).toMatch(/1970-01-01T00:02:00.000Z, which looks unset/);
    const zoneless = await keystone(['floor', '--state-dir', stateDir, '--reset', '--to', '2024-01-01 10:00']);
    expect(zoneless.code).toBe(2);
    expect(zoneless.stderr).toMatch(/ISO 8601 time with a zone/);
    expect(floor()).toBe(1_700_000_000);
  });

  it('refuses to reset while another connection has the store open (as a running agent does): KS_STATE_BUSY, floor unchanged', async () => {
    applied(YEAR_2100);
    const agentStore = openStateStore(stateDir);
    agentStore.lastSignedAt(); // an agent that read its store and sits idle
    try {
      const r = await keystone(['floor', '--state-dir', stateDir, '--reset']);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/in use by another process.*stop it first.*\[KS_STATE_BUSY\]/);
      // Showing it is fine while the agent runs.
      expect((await keystone(['floor', '--state-dir', stateDir])).code).toBe(0);
    } finally {
      agentStore.close();
    }
    expect(floor()).toBe(YEAR_2100);
    expect((await keystone(['floor', '--state-dir', stateDir, '--reset'])).code).toBe(0);
    expect(floor()).toBeLessThan(YEAR_2100);
  });

  it('a state directory without a database is an error, and none is created', async () => {
    const empty = join(stateDir, 'nothing-here');
    const r = await keystone(['floor', '--state-dir', empty, '--reset']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no state database at .*state\.db/);
    expect(r.stderr).toMatch(/usage: keystone floor/);
    expect(existsSync(empty)).toBe(false);
  });
});
