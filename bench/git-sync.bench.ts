// Benchmark of the Git source: what a poll costs when nothing is new, and what an incremental fetch of one new
// commit costs, through GitSource (dist/source/git-source.js, isomorphic-git) beside native git in the same run.
// Run by hand (`npm run bench -- git-sync`, which builds first); it asserts no timing, it reports.
//
// The repository: 1,000 commits (made with `git fast-import`, untimed) of 100 recipes and a plan, each commit
// changing one recipe; served over smart HTTP by `git http-backend` behind a small loopback server that runs in a
// child process (lib/git-backend-child.ts), so that its CPU is not counted against either client, and that counts
// every request's and response's body bytes.
//
//   no-op poll     GitSource.syncNow() with the branch unchanged (protocol v2 ls-refs only), beside
//                  `git fetch --depth=1 origin main` in a native shallow bare clone that is up to date (what a
//                  naive agent would run each poll) and `git ls-remote URL refs/heads/main` (native's cheapest look);
//   one commit     a new commit is pushed (untimed), then GitSource.syncNow() (look, shallow fetch, ancestry check,
//                  offer) beside the native `git fetch --depth=1` of the same commit.
// The measures take turns run by run. Wall: median ms. CPU: user + system ms, mean per run (GitSource: this
// process's cpuUsage; native git: the children's cutime + cstime from /proc/self/stat, in clock ticks, which is
// why it is a mean rather than a median). Bytes: request + response bodies seen by the server, mean per run.
// Ratios are against native `git fetch --depth=1`. Aims: no-op poll < 50 ms; within 1.5× of native git (wall time;
// for one commit, bytes too: GitSource asks for a thin pack, as native git does, and completes it before storing it).
//
// Options: --commits 1000  --runs 30 (no-op polls per measure)  --fetches 10 (one-commit rounds)
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs, promisify } from 'node:util';
import { GitSource } from '../dist/source/git-source.js';
import { fastImportScript, recipe } from './git-sync/fast-import.js';
import { forkGitBackend, type BackendMessage } from './lib/git-backend-child.js';
import { BENCH_GIT_ENV, type BackendTotals } from './lib/git-http-backend.js';
import { machine } from './lib/machine.js';
import { benchDir, ensureDir } from './lib/paths.js';
import { clockTicksPerSecond } from './lib/processes.js';
import { fmt, mean, median, ratio, round } from './lib/stats.js';

await main();

/** One measure: wall and CPU ms, then the bytes and requests the server saw. */
interface Measure {
  wallMs: number;
  cpuMs: number;
  bytes?: number;
  requests?: number;
}

async function main() {
  const { values: opts } = parseArgs({
    args: process.argv.slice(2),
    options: {
      commits: { type: 'string', default: '1000' },
      runs: { type: 'string', default: '30' },
      fetches: { type: 'string', default: '10' },
    },
  });
  const commits = Number(opts.commits);
  const runs = Number(opts.runs);
  const fetches = Number(opts.fetches);
  const resultsFile = join(benchDir, 'results', 'git-sync.json');
  const hz = clockTicksPerSecond();
  const env = BENCH_GIT_ENV;

  /** Runs git to completion; wall ms and the CPU ms it used (children's ticks of /proc/self/stat). */
  const runGit = (args: string[], input?: string) =>
    new Promise<Measure>((resolve, reject) => {
      const c0 = childTicks();
      const t0 = performance.now();
      const child = spawn('git', args, { env, stdio: [input === undefined ? 'ignore' : 'pipe', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr!.on('data', (d) => (stderr += d));
      if (input !== undefined) child.stdin!.end(input);
      child.on('error', reject);
      child.on('close', (code) => {
        const wallMs = performance.now() - t0;
        if (code !== 0) return reject(new Error(`git ${args.join(' ')} failed (${code}): ${stderr}`));
        resolve({ wallMs, cpuMs: ((childTicks() - c0) * 1000) / hz });
      });
    });

  const work = mkdtempSync(join(tmpdir(), 'keystone-bench-git-sync-'));
  const server = forkGitBackend(join(work, 'srv'));
  const ask = <M extends BackendMessage>() => new Promise<M>((resolve) => server.once('message', (m: M) => resolve(m)));
  const stats = async () => {
    const p = ask<{ totals: BackendTotals }>();
    server.send('stats');
    return (await p).totals;
  };
  const loadBefore = loadavg()[0]!;
  const tStart = performance.now();
  try {
    const bare = join(work, 'srv', 'fleet.git');
    mkdirSync(join(work, 'srv'), { recursive: true });
    await runGit(['init', '--quiet', '--bare', '--initial-branch=main', bare]);
    process.stdout.write(`generating ${commits} commits… `);
    await runGit(['-C', bare, 'fast-import', '--quiet'], fastImportScript(commits));
    console.log('done');
    const { port } = await ask<{ port: number }>();
    const url = `http://127.0.0.1:${port}/fleet.git`;

    // The one writer of new commits: a local clone that pushes to the bare repository on disk (untimed).
    const ws = join(work, 'ws');
    await runGit(['clone', '--quiet', bare, ws]);
    let next = commits;
    const pushOne = async () => {
      next++;
      writeFileSync(join(ws, 'recipes', `r-${String(next % 100).padStart(3, '0')}.toml`), recipe(next % 100, next));
      await runGit(['-C', ws, 'commit', '--quiet', '-am', `commit ${next}`]);
      await runGit(['-C', ws, 'push', '--quiet', 'origin', 'HEAD:refs/heads/main']);
    };

    // GitSource, started (its first clone untimed).
    let offered = 0;
    let lastApplied: string | undefined;
    const errors: Error[] = [];
    const src = new GitSource({
      repo: url,
      ref: 'main',
      cacheDir: join(work, 'cache'),
      pollMs: 3_600_000,
      random: Math.random,
      allowHistoryRewrite: false,
      lastAppliedCommit: () => lastApplied,
      onRevision: (r) => {
        offered++;
        lastApplied = r.id;
      },
      onRejected: (r) => errors.push(new Error(`${r.code}: ${r.reason}`)),
      onError: (e) => errors.push(e),
    });
    await src.start();
    if (offered !== 1) throw new Error(`GitSource did not offer the tip: ${errors.map((e) => e.message).join('; ')}`);

    // Native: a shallow bare clone kept in step the same way.
    const native = join(work, 'native.git');
    await runGit(['clone', '--quiet', '--bare', '--depth=1', '--single-branch', '--branch', 'main', url, native]);
    const nativeFetch = [
      '-C',
      native,
      'fetch',
      '--quiet',
      '--depth=1',
      '--no-tags',
      'origin',
      '+refs/heads/main:refs/heads/main',
    ];

    const measure = async (fn: () => Promise<Measure>): Promise<Measure> => {
      const s0 = await stats();
      const r = await fn();
      const s1 = await stats();
      return {
        ...r,
        bytes: s1.bytesIn - s0.bytesIn + (s1.bytesOut - s0.bytesOut),
        requests: s1.requests - s0.requests,
      };
    };
    const viaSource = async () => {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await src.syncNow();
      const wallMs = performance.now() - t0;
      const c = process.cpuUsage(c0);
      return { wallMs, cpuMs: (c.user + c.system) / 1000 };
    };

    // Warm-up: one of each.
    await viaSource();
    await runGit(nativeFetch);
    await runGit(['ls-remote', url, 'refs/heads/main']);

    const noop: Record<'keystone' | 'native' | 'lsRemote', Measure[]> = { keystone: [], native: [], lsRemote: [] };
    for (let i = 0; i < runs; i++) {
      globalThis.gc?.();
      const order = i % 2 === 0 ? ['keystone', 'native', 'lsRemote'] : ['lsRemote', 'native', 'keystone'];
      for (const k of order) {
        if (k === 'keystone') noop.keystone.push(await measure(viaSource));
        if (k === 'native') noop.native.push(await measure(() => runGit(nativeFetch)));
        if (k === 'lsRemote') noop.lsRemote.push(await measure(() => runGit(['ls-remote', url, 'refs/heads/main'])));
      }
    }
    if (offered !== 1) throw new Error('a no-op poll offered a revision');

    const one: Record<'keystone' | 'native', Measure[]> = { keystone: [], native: [] };
    for (let i = 0; i < fetches; i++) {
      await pushOne();
      globalThis.gc?.();
      const before: number = offered;
      const order = i % 2 === 0 ? ['keystone', 'native'] : ['native', 'keystone'];
      for (const k of order) {
        if (k === 'keystone') one.keystone.push(await measure(viaSource));
        else one.native.push(await measure(() => runGit(nativeFetch)));
      }
      if (offered !== before + 1)
        throw new Error(`GitSource did not offer commit ${next}: ${errors.map((e) => e.message).join('; ')}`);
    }
    if (errors.length) throw new Error(`GitSource reported: ${errors.map((e) => e.message).join('; ')}`);
    await src.close();

    const sum = (xs: Measure[]) => ({
      wallMs: round(median(xs.map((x) => x.wallMs)), 2)!,
      cpuMs: round(mean(xs.map((x) => x.cpuMs)), 2)!,
      bytes: Math.round(mean(xs.map((x) => x.bytes!))),
      requests: round(mean(xs.map((x) => x.requests!)), 1)!,
    });
    const results = {
      noop: { keystone: sum(noop.keystone), nativeFetch: sum(noop.native), nativeLsRemote: sum(noop.lsRemote) },
      oneCommit: { keystone: sum(one.keystone), nativeFetch: sum(one.native) },
    };
    const loadAfter = loadavg()[0]!;

    const rows: [string, ReturnType<typeof sum>, ReturnType<typeof sum>][] = [
      ['no-op poll: GitSource.syncNow', results.noop.keystone, results.noop.nativeFetch],
      ['no-op poll: git fetch --depth=1', results.noop.nativeFetch, results.noop.nativeFetch],
      ['no-op poll: git ls-remote', results.noop.nativeLsRemote, results.noop.nativeFetch],
      ['one commit: GitSource.syncNow', results.oneCommit.keystone, results.oneCommit.nativeFetch],
      ['one commit: git fetch --depth=1', results.oneCommit.nativeFetch, results.oneCommit.nativeFetch],
    ];
    console.log(
      `\ngit-sync benchmark — node ${process.version}, ${cpus().length} × ${cpus()[0]?.model.trim() ?? 'cpu'}, ${commits} commits, ${runs} no-op polls, ${fetches} one-commit fetches`,
    );
    console.log(
      `${'measure'.padEnd(34)} ${'wall ms'.padStart(8)} ${'ratio'.padStart(6)} │ ${'CPU ms'.padStart(7)} ${'ratio'.padStart(6)} │ ${'bytes'.padStart(7)} ${'ratio'.padStart(6)} │ requests`,
    );
    for (const [label, m, ref] of rows)
      console.log(
        `${label.padEnd(34)} ${fmt(m.wallMs, 1).padStart(8)} ${ratio(m.wallMs, ref.wallMs).padStart(6)} │ ${fmt(m.cpuMs, 1).padStart(7)} ${ratio(m.cpuMs, ref.cpuMs).padStart(6)} │ ` +
          `${fmt(m.bytes).padStart(7)} ${ratio(m.bytes, ref.bytes).padStart(6)} │ ${fmt(m.requests, 1)}`,
      );
    const aims = {
      noopUnder50ms: results.noop.keystone.wallMs < 50,
      noopWithin1_5xNativeFetch: results.noop.keystone.wallMs <= 1.5 * results.noop.nativeFetch.wallMs,
      oneCommitWithin1_5xNativeFetch: results.oneCommit.keystone.wallMs <= 1.5 * results.oneCommit.nativeFetch.wallMs,
      // Issue 16: thin packs (completed against the cache before they are stored) bring only what changed.
      oneCommitBytesWithin1_5xNativeFetch:
        results.oneCommit.keystone.bytes <= 1.5 * results.oneCommit.nativeFetch.bytes,
    };
    console.log(
      `\naims: no-op poll < 50 ms ${aims.noopUnder50ms ? 'met' : 'MISSED'}; no-op within 1.5× of native fetch ${aims.noopWithin1_5xNativeFetch ? 'met' : 'MISSED'}; ` +
        `one commit within 1.5× of native fetch ${aims.oneCommitWithin1_5xNativeFetch ? 'met' : 'MISSED'} (wall-clock medians), ` +
        `in bytes ${aims.oneCommitBytesWithin1_5xNativeFetch ? 'met' : 'MISSED'}`,
    );
    if (loadBefore > cpus().length / 2 || loadAfter > cpus().length / 2)
      console.log(
        `note: load average ${fmt(loadBefore, 2)} before, ${fmt(loadAfter, 2)} after, on ${cpus().length} CPUs: other processes competed, the figures are noisy`,
      );

    ensureDir(join(benchDir, 'results'));
    writeFileSync(
      resultsFile,
      JSON.stringify(
        {
          bench: 'git-sync',
          date: new Date().toISOString(),
          ...machine(),
          git: (await promisify(execFile)('git', ['--version'])).stdout.trim(),
          loadAverage1m: { before: round(loadBefore, 2), after: round(loadAfter, 2) },
          commits,
          runs,
          fetches,
          units: {
            wallMs: 'median ms',
            cpuMs: 'mean ms (user + system)',
            bytes: 'mean request + response body bytes',
            requests: 'mean HTTP requests',
          },
          reference:
            'native git fetch --depth=1 --no-tags origin +refs/heads/main:refs/heads/main in a shallow bare clone',
          results,
          aims,
        },
        null,
        2,
      ) + '\n',
    );
    console.log(`\nwrote ${resultsFile} (bench took ${fmt((performance.now() - tStart) / 1000, 0)} s)`);
  } finally {
    server.send('exit');
    await new Promise((r) => server.once('exit', r));
    rmSync(work, { recursive: true, force: true });
  }
}

/** CPU ticks of this process's reaped children (cutime + cstime). */
function childTicks(): number {
  const r = readFileSync('/proc/self/stat', 'utf8');
  const f = r.slice(r.lastIndexOf(')') + 2).split(' ');
  return Number(f[13]) + Number(f[14]);
}
