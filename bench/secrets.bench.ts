// Benchmark of secrets (SPEC §16) against the size of a target: what one device pays to open its target's key file
// (secrets/keys/T.age, one X25519 stanza per enrolled device of the target) and the secret it reads, through Keystone's
// own path (SecretOpener: age-encryption in this process) beside Debian's `age -d -i` on the same files in the same run;
// and the bytes a device fetches: the key file grows with the target, a secret does not. Run by hand (`npm run bench --
// secrets`, which builds first); it asserts no timing, it reports.
//
// For each size N the key file is made once (untimed) for N device identities; the device timed is the LAST recipient
// (age tries stanzas in order: the worst case) and the first (the best). Wall: median ms over --runs. The `age` binary
// is timed as a child process, spawn included; its floor (`age -d` of a one-recipient file) is printed beside it.
//
// Options: --sizes 1,100,1000,5000  --runs 7
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

const { values: opts } = parseArgs({
  args: process.argv.slice(2),
  options: { sizes: { type: 'string', default: '1,100,1000,5000' }, runs: { type: 'string', default: '7' } },
});
const sizes = opts.sizes.split(',').map(Number);
const runs = Number(opts.runs);

const { resultsHead } = await import('./lib/machine.js');
const { benchDir, ensureDir } = await import('./lib/paths.js');
const { fmt, median, ratio, round } = await import('./lib/stats.js');
const { encryptTo, newAgeIdentity } = await import('../dist/secrets/age-codec.js');
const { formatAgeIdentityFile } = await import('../dist/identity/age-identity-file.js');
const { SecretOpener } = await import('../dist/secrets/open-secrets.js');
const { digestKeyOf } = await import('../dist/secrets/secret-digest.js');
const { MemoryReader } = await import('../dist/source/memory-reader.js');
const { MAX_SECRET_FILE_BYTES } = await import('../dist/core/secret-paths.js');

const hasAge = spawnSync('age', ['--version']).status === 0;
const dir = mkdtempSync(join(tmpdir(), 'keystone-bench-secrets-'));
const enc = new globalThis.TextEncoder();
const loadBefore = loadavg()[0]!;

/** Median wall ms of `fn` over `runs` runs. */
async function timed(fn: () => unknown): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    xs.push(performance.now() - t);
  }
  return median(xs);
}

function ageDecrypt(identityFile: string, file: string): void {
  execFileSync('age', ['-d', '-i', identityFile, file], { stdio: ['ignore', 'pipe', 'pipe'] });
}

const target = await newAgeIdentity();
const secret = await encryptTo([target.recipient], enc.encode('correct horse battery staple'));
type Row = {
  devices: number;
  keyFileBytes: number;
  bytesPerDevice: number | null;
  secretBytes: number;
  fitsLimit: boolean;
} & Partial<Record<`${'keystone' | 'age'}Ms_${'last' | 'first'}`, number | null>>;
const rows: Row[] = [];
let floor: number | null | undefined;
try {
  const devices: Awaited<ReturnType<typeof newAgeIdentity>>[] = [];
  for (const n of sizes) {
    while (devices.length < n) devices.push(await newAgeIdentity());
    const keyFile = await encryptTo(
      devices.slice(0, n).map((d) => d.recipient),
      enc.encode(formatAgeIdentityFile(target, Date.UTC(2026, 0, 1))),
    );
    const keyPath = join(dir, `key-${n}.age`);
    writeFileSync(keyPath, keyFile);
    const row: Row = {
      devices: n,
      keyFileBytes: keyFile.length,
      bytesPerDevice: round(keyFile.length / n, 1),
      secretBytes: secret.length,
      fitsLimit: keyFile.length <= MAX_SECRET_FILE_BYTES,
    };
    for (const [which, d] of [
      ['last', devices[n - 1]!],
      ['first', devices[0]!],
    ] as const) {
      const files = new Map([
        ['secrets/keys/t.age', keyFile],
        ['secrets/s.age', secret],
      ]);
      // A fresh opener each run: its cache would otherwise answer from memory after the first.
      const ms = await timed(() =>
        new SecretOpener({ ageIdentity: d.identity, digestKey: digestKeyOf(d.identity) }).open(
          new MemoryReader(files, 'bench'),
          ['s'],
          't',
        ),
      );
      row[`keystoneMs_${which}`] = round(ms, 2);
      if (hasAge) {
        const idPath = join(dir, `id-${n}-${which}.key`);
        writeFileSync(idPath, formatAgeIdentityFile(d, Date.UTC(2026, 0, 1)), { mode: 0o600 });
        row[`ageMs_${which}`] = round(await timed(() => ageDecrypt(idPath, keyPath)), 2);
      }
    }
    rows.push(row);
  }
  if (hasAge) {
    const one = join(dir, 'one.age');
    writeFileSync(one, await encryptTo([devices[0]!.recipient], enc.encode('x')));
    const idPath = join(dir, 'floor.key');
    writeFileSync(idPath, formatAgeIdentityFile(devices[0]!, Date.UTC(2026, 0, 1)), { mode: 0o600 });
    floor = round(await timed(() => ageDecrypt(idPath, one)), 2);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

console.log(
  `secrets: opening a target's key file and one secret, by the last (worst) and first recipient; median of ${runs} runs`,
);
console.log(
  `${'devices'.padStart(8)} ${'key file'.padStart(10)} ${'B/device'.padStart(9)} ${'secret'.padStart(7)} ${'keystone last'.padStart(14)} ${'age last'.padStart(9)} ${'ratio'.padStart(7)} ${'keystone first'.padStart(15)} ${'age first'.padStart(10)}`,
);
for (const r of rows)
  console.log(
    `${String(r.devices).padStart(8)} ${fmt(r.keyFileBytes).padStart(10)} ${fmt(r.bytesPerDevice, 1).padStart(9)} ${fmt(r.secretBytes).padStart(7)} ${`${fmt(r.keystoneMs_last, 2)} ms`.padStart(14)} ${(r.ageMs_last !== undefined ? `${fmt(r.ageMs_last, 2)} ms` : '—').padStart(9)} ${ratio(r.keystoneMs_last, r.ageMs_last).padStart(7)} ${`${fmt(r.keystoneMs_first, 2)} ms`.padStart(15)} ${(r.ageMs_first !== undefined ? `${fmt(r.ageMs_first, 2)} ms` : '—').padStart(10)}${r.fitsLimit ? '' : '  (over the 1 MiB limit: refused by devices)'}`,
  );
if (floor !== undefined) console.log(`age's floor (spawn + one stanza): ${fmt(floor, 2)} ms`);
else console.log('age is not installed: its column is empty (apt-get install age)');
const perDevice = rows.length ? rows[rows.length - 1]!.bytesPerDevice! : NaN;
console.log(
  `per device: a secret is ${secret.length} B whatever the target's size; the key file is ~${fmt(perDevice, 0)} B per device of the target, fetched by each of them once per enrolment or rekey.` +
    ` 1 MiB (the limit a device reads) holds ~${fmt(MAX_SECRET_FILE_BYTES / perDevice, 0)} devices per target; 100,000 devices are then ≥ ${fmt(Math.ceil(100_000 / (MAX_SECRET_FILE_BYTES / perDevice)), 0)} targets (or groups).`,
);

ensureDir(join(benchDir, 'results'));
writeFileSync(
  join(benchDir, 'results', 'secrets.json'),
  `${JSON.stringify({ ...resultsHead('secrets', { loadBefore, loadAfter: loadavg()[0]!, othersPercent: NaN }), runs, rows, ageFloorMs: floor ?? null }, null, 2)}\n`,
);
