// The replay floor is waived for the revision a device runs, offered again (a restart, a rollback's target), so that
// what runs stays supervised. "The same" must mean the same signed set: a directory's or a manual apply's id is a short
// hash that someone able to write files could make collide with an older signed set's (issue 27's review ground one in
// four minutes). Here the collision is given outright — a revision with the applied id but an older set's content —
// and it is refused as a replay, while the set that runs, offered again under its id, is taken up.
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../../src/agent/agent.js';
import { createLogger } from '../../../src/log/logger.js';
import { ProcessRuntime } from '../../../src/runtime/process-runtime.js';
import { DirectoryReader } from '../../../src/source/directory-reader.js';
import { buildKeyring } from '../../../src/trust/keyring.js';
import { formatPublicKey, formatSignature, generateKey, sign } from '../../../src/trust/minisign.js';

const key = generateKey((n) => new Uint8Array(randomBytes(n)));
const keyring = buildKeyring([{ source: 'test.pub', text: formatPublicKey(key) }]);
const dirs: string[] = [];
const agents: Agent[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) await a.close({ stopComponents: true });
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const temp = (p: string) => {
  const d = mkdtempSync(join(tmpdir(), p));
  chmodSync(d, 0o755);
  dirs.push(d);
  return d;
};

/** A signed set of one component at `version`, signed at `seconds`. */
function signedSet(version: string, seconds: number): DirectoryReader {
  const dir = temp('ks-same-id-');
  mkdirSync(join(dir, 'recipes'));
  mkdirSync(join(dir, 'plans'));
  const files: Record<string, string> = {
    'recipes/svc.toml': `[metadata]\nname = "com.test.svc"\nversion = "${version}"\n\n[lifecycle.run.exec]\ncommand = "sh"\nargs = ["-c", "sleep 100"]\n`,
    'plans/p.toml': '[[components]]\nname = "svc"\nrecipe = "recipes/svc.toml"\n',
  };
  for (const [path, text] of Object.entries(files)) writeFileSync(join(dir, path), text);
  const sums = Object.entries(files)
    .map(([path, text]) => `${createHash('sha256').update(text).digest('hex')}  ${path}\n`)
    .join('');
  writeFileSync(join(dir, 'SHA256SUMS'), sums);
  writeFileSync(
    join(dir, 'SHA256SUMS.minisig'),
    formatSignature(sign(new TextEncoder().encode(sums), key, `timestamp:${seconds}\tfile:SHA256SUMS\thashed`)),
  );
  return new DirectoryReader(dir);
}

describe('the revision a device runs, offered again under its id', () => {
  it('is the same signed set or refused as a replay: an older set under a colliding id is not applied', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const a = await startAgent({
      planFile: 'plans/p.toml',
      stateDir: temp('ks-same-id-state-'),
      trust: { unsigned: false, keyring },
      log: createLogger({ pretty: false, write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) }),
      runtimes: { process: new ProcessRuntime({ installArtifacts: async () => undefined }) },
      probe: async () => ({ ok: true, detail: 'no check', latencyMs: 0 }),
      concurrency: 2,
      graceMs: 2000,
    });
    agents.push(a);
    const now = Math.floor(Date.now() / 1000);
    const id = 'manual:0123456789ab';
    a.applyManual(
      { id, origin: 'manual', source: 'test', reader: signedSet('2.0.0', now - 60), planFile: 'plans/p.toml' },
      { force: false },
    );
    await a.idle();
    expect(a.store.component('svc')).toMatchObject({ version: '2.0.0', state: 'running' });
    // The same id, an older signed set (what a 48-bit collision would bring): refused, nothing touched.
    a.offer({ id, origin: 'manual', source: 'test', reader: signedSet('1.0.0', now - 3600) });
    await a.idle();
    expect(a.store.history({ limit: 1 })[0]).toMatchObject({
      revision: id,
      outcome: 'rejected',
      summary: expect.stringMatching(/^KS_SIGNATURE_REPLAYED: /),
    });
    expect(a.store.component('svc')).toMatchObject({ version: '2.0.0', state: 'running' });
    // The set that runs, under its id: taken up (not refused by the floor it set itself).
    a.offer({ id, origin: 'manual', source: 'test', reader: signedSet('2.0.0', now - 60) });
    await a.idle();
    expect(a.store.history({ limit: 1 })[0]!.outcome).not.toBe('rejected');
    expect(a.store.component('svc')).toMatchObject({ version: '2.0.0', state: 'running' });
  });
});
