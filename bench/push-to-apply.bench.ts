// Benchmark of push-to-apply latency: how long after a `git push` the agent starts applying the new commit, and has
// finished applying it, with a GitHub webhook and with polling alone. Issue 6's aim: a webhook push starts applying
// in under a second. Run by hand (`npm run bench -- push-to-apply`, which builds first); it asserts no timing, it
// reports.
//
// The fleet repository: N stand-in components (lib/stand-in.ts: `node stand-in.mjs --port P`, an http:// health check
// every 50 ms, no dependencies), signed with a key made by `keystonectl keygen` (`keystonectl sign` before every
// commit, untimed; --unsigned runs the agent with --allow-unsigned instead). It is served over smart HTTP by `git
// http-backend` behind a small loopback server in a child process (lib/git-backend-child.ts), and the real agent
// follows it as a child process:
//   keystone agent --repo http://127.0.0.1:PORT/fleet.git --ref main --plan plans/plan.toml --trusted-key K.pub
//     --state-dir FRESH --listen 127.0.0.1:API --log-format json --status none --stop-on-exit --poll P
//     [--webhook-secret-file F]
// Each push bumps one component's recipe version (so exactly one component restarts), commits in a work tree and
// pushes to the bare repository on disk. The clock starts when `git push` returns; then
//   start   the agent's `reconcile plan` log line whose revision is the pushed commit (the apply starts);
//   done    the `all components running` (or `apply finished` / `apply failed`) line after it (the apply ends),
// both by the agent's own log timestamps (the same wall clock as the bench's).
// Modes, one fresh agent each:
//   webhook  --poll 10m; right after the push, POST /v1/webhooks/github with a push event
//            {"ref":"refs/heads/main","after":SHA}, X-GitHub-Event: push, X-Hub-Signature-256 (HMAC-SHA256 of the
//            body with the secret). Reference, measured in the same run after each apply: a native
//            `git fetch --depth=1` of the same push in a shallow bare clone (the floor for getting a push once told).
//            Where the time goes: push → POST sent, POST → the agent's `webhook:` line, → `new revision` (the look:
//            ls-refs, thin fetch, ancestry check), → `reconcile plan` (signature check, load, diff), → done.
//   polling  --poll 2s, no webhook; each push waits a random part of a poll interval first, so that pushes land
//            uniformly across the poll cycle. Reference: the expected mean wait for the next poll, P/2.
//
// Options: --pushes 10 (per mode)  --poll 2s (the polling mode's interval)  --components 4  --modes webhook,polling
//          --port-base 31500 (stand-ins on port-base…, the agent's API on port-base + 50; below 32768, the ephemeral
//          range)  --unsigned
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { parseDuration } from '../dist/core/duration.js';
import { forkGitBackend } from './lib/git-backend-child.js';
import { busyNote, load1, machine, othersCpu, resultsHead } from './lib/machine.js';
import { benchDir, ensureDir, projectDir } from './lib/paths.js';
import { assertPortsFree } from './lib/ports.js';
import { recipeNameOf, writeProcessRepo } from './lib/process-repo.js';
import { cleanUpOnSignal, killStragglers } from './lib/processes.js';
import { writeStandIn } from './lib/stand-in.js';
import { startAgent, type AgentEvent } from './lib/start-agent.js';
import { fmt, ratio, round, sleep } from './lib/stats.js';
import { run } from './push-to-apply/run-timed.js';
import { summarise, type ModeRun, type Sample } from './push-to-apply/summary.js';
import { postWebhook } from './push-to-apply/webhook.js';

await main();

// ─── the benchmark ──────────────────────────────────────────────────────────────────────────────────────────

async function main() {
  const { values: opts } = parseArgs({
    args: process.argv.slice(2),
    options: {
      pushes: { type: 'string', default: '10' },
      poll: { type: 'string', default: '2s' },
      components: { type: 'string', default: '4' },
      modes: { type: 'string', default: 'webhook,polling' },
      'port-base': { type: 'string', default: '31500' },
      unsigned: { type: 'boolean', default: false },
    },
  });
  const pushes = Number(opts.pushes);
  const pollMs = parseDuration(opts.poll)!;
  const n = Number(opts.components);
  const modes = opts.modes.split(',').map((m) => m.trim());
  const portBase = Number(opts['port-base']);
  const apiPort = portBase + 50;
  if (
    !Number.isInteger(pushes) ||
    pushes < 1 ||
    !(pollMs > 0) ||
    !Number.isInteger(n) ||
    n < 1 ||
    n > 40 ||
    modes.some((m) => m !== 'webhook' && m !== 'polling') ||
    !Number.isInteger(portBase) ||
    portBase < 1024 ||
    apiPort >= 32768
  ) {
    console.error(
      'usage: node --import tsx bench/push-to-apply.bench.ts [--pushes 10] [--poll 2s] [--components 4] [--modes webhook,polling] [--port-base 31500] [--unsigned]',
    );
    process.exit(2);
  }
  const signed = !opts.unsigned;
  const resultsFile = join(benchDir, 'results', 'push-to-apply.json');

  const git = (...args: string[]) => run('git', args);
  const keystonectl = (...args: string[]) =>
    run(process.execPath, [join(projectDir, 'bin', 'keystonectl.js'), ...args], process.env);

  const work = mkdtempSync(join(tmpdir(), 'keystone-bench-push-to-apply-'));
  const rmWork = () => rmSync(work, { recursive: true, force: true });
  cleanUpOnSignal(work, rmWork);
  const others = othersCpu(work);
  const loadBefore = load1();
  const tStart = performance.now();
  const server = forkGitBackend(join(work, 'srv'));
  const serverPort = new Promise<number>((resolve) => server.once('message', (m: { port: number }) => resolve(m.port)));
  try {
    // The repository: a work tree that commits and pushes to the bare repository the server serves.
    const standIn = writeStandIn(join(work, 'bin'));
    const components = Array.from({ length: n }, (_, i) => ({
      name: `c${i}`,
      port: portBase + i,
      delay: 0,
      check: 'http' as const,
      interval: '50ms',
      timeout: '1s',
      threshold: 200,
    }));
    const ws = join(work, 'ws');
    const bare = join(work, 'srv', 'fleet.git');
    await git('init', '--quiet', '--bare', '--initial-branch=main', bare);
    await git('init', '--quiet', '--initial-branch=main', ws);
    const plan = writeProcessRepo(ws, components, standIn);
    const keyPrefix = join(work, 'keys', 'bench');
    let trustArgs = ['--allow-unsigned'];
    if (signed) {
      ensureDir(join(work, 'keys'));
      await keystonectl('keygen', '--out', keyPrefix, '--no-password');
      trustArgs = ['--trusted-key', `${keyPrefix}.pub`];
    }
    let version = 0;
    /** Bumps component `i`'s version, signs, commits, pushes (the push timed alone); the commit id and when the push returned. */
    const pushOne = async (i: number) => {
      version++;
      const recipeFile = join(ws, 'recipes', `${recipeNameOf(`c${i}`)}.toml`);
      writeFileSync(
        recipeFile,
        readFileSync(recipeFile, 'utf8').replace(/^version = ".*"$/m, `version = "1.0.${version}"`),
      );
      if (signed) await keystonectl('sign', '--key', `${keyPrefix}.key`, '--repo', ws);
      await git('-C', ws, 'add', '-A');
      await git('-C', ws, 'commit', '--quiet', '-m', `c${i} 1.0.${version}`);
      const sha = (await git('-C', ws, 'rev-parse', 'HEAD')).stdout.trim();
      const push = await git('-C', ws, 'push', '--quiet', bare, 'HEAD:refs/heads/main');
      return { sha, component: `c${i}`, pushMs: push.wallMs, pushedAt: push.endedAt };
    };
    if (signed) await keystonectl('sign', '--key', `${keyPrefix}.key`, '--repo', ws);
    await git('-C', ws, 'add', '-A');
    await git('-C', ws, 'commit', '--quiet', '-m', 'the fleet');
    await git('-C', ws, 'push', '--quiet', bare, 'HEAD:refs/heads/main');
    const url = `http://127.0.0.1:${await serverPort}/fleet.git`;

    // Native git's floor: a shallow bare clone kept in step after each apply.
    const native = join(work, 'native.git');
    await git('clone', '--quiet', '--bare', '--depth=1', '--single-branch', '--branch', 'main', url, native);
    const nativeFetch = () =>
      git('-C', native, 'fetch', '--quiet', '--depth=1', '--no-tags', 'origin', '+refs/heads/main:refs/heads/main');
    await nativeFetch(); // warm-up

    const secretFile = join(work, 'webhook-secret');
    const secret = randomBytes(32).toString('hex');
    writeFileSync(secretFile, secret + '\n', { mode: 0o600 });
    const isDone = (e: AgentEvent) =>
      e.msg === 'all components running' || e.msg === 'apply finished' || e.msg?.startsWith?.('apply failed');

    const byMode: Record<string, ModeRun> = {};
    let k = 0;
    for (const mode of modes) {
      await assertPortsFree([...components.map((c) => c.port), apiPort]);
      const stateDir = join(work, `state-${mode}`);
      const poll = mode === 'webhook' ? '10m' : opts.poll;
      const agent = startAgent({
        gitRepo: url,
        plan,
        stateDir,
        trustArgs,
        extraArgs: [
          '--ref',
          'main',
          '--listen',
          `127.0.0.1:${apiPort}`,
          '--status',
          'none',
          '--poll',
          poll,
          ...(mode === 'webhook' ? ['--webhook-secret-file', secretFile] : []),
        ],
      });
      const samples: Sample[] = [];
      try {
        await agent.waitFor(isDone, 60_000, 'the first apply');
        await agent.waitFor((e) => e.msg === 'HTTP API listening', 10_000, 'the HTTP API');
        for (let p = 0; p < pushes; p++) {
          // Polling: land anywhere in the poll cycle. Webhook: a short pause, the components settled.
          await sleep(mode === 'polling' ? Math.random() * pollMs : 200);
          globalThis.gc?.();
          const pushed = await pushOne(k++ % n);
          const s: Sample = { mode, ...pushed };
          if (mode === 'webhook') {
            const hook = await postWebhook(apiPort, secret, pushed.sha);
            if (hook.status !== 202) throw new Error(`the webhook answered ${hook.status}: ${hook.text}`);
            Object.assign(s, { hookSentAt: hook.sentAt, hookAckAt: hook.ackAt });
          }
          const planLine = await agent.waitFor(
            (e) => e.msg === 'reconcile plan' && e.revision === pushed.sha,
            mode === 'polling' ? 3 * pollMs + 30_000 : 30_000,
            `"reconcile plan" for ${pushed.sha.slice(0, 7)}`,
          );
          const planIdx = agent.events.indexOf(planLine);
          const doneLine = await agent.waitFor(
            (e, i) => i > planIdx && isDone(e),
            60_000,
            `the end of the apply of ${pushed.sha.slice(0, 7)}`,
          );
          const newRev = agent.events.find((e) => e.msg === 'new revision' && e.revision === pushed.sha);
          const hookLine = agent.events.find((e) => e.msg?.startsWith?.('webhook:') && e.after === pushed.sha);
          Object.assign(s, {
            startMs: planLine.t - pushed.pushedAt,
            doneMs: doneLine.t - pushed.pushedAt,
            outcome: doneLine.msg,
            stopOrder: planLine.stop_order ?? [],
            startOrder: planLine.start_order ?? [],
            newRevisionMs: newRev ? newRev.t - pushed.pushedAt : undefined,
            hookLoggedMs: hookLine ? hookLine.t - pushed.pushedAt : undefined,
          });
          if (mode === 'webhook') {
            s.hookSentMs = s.hookSentAt! - pushed.pushedAt;
            s.hookAckMs = s.hookAckAt! - pushed.pushedAt;
            s.nativeFetchMs = (await nativeFetch()).wallMs;
          }
          process.stderr.write(
            `${mode} push ${p + 1}/${pushes} (${pushed.sha.slice(0, 7)}, ${pushed.component}): starts ${fmt(s.startMs)} ms, done ${fmt(s.doneMs)} ms` +
              `${s.nativeFetchMs !== undefined ? `; native fetch ${fmt(s.nativeFetchMs)} ms` : ''}\n`,
          );
          samples.push(s);
        }
      } finally {
        await agent.stop();
        await killStragglers(agent.componentPids(), join(work, 'bin'));
      }
      const stragglerLogs = agent.events
        .filter((e) => e.level >= 40 && !/UNSIGNED|unsigned/.test(e.msg ?? ''))
        .map((e) => e.msg!);
      byMode[mode] = { poll, samples, warnings: [...new Set(stragglerLogs)] };
    }
    const loadAfter = load1();
    const othersPercent = others.percent();

    const { summary, references, aims } = summarise(byMode, pollMs);
    const W = summary.webhook;
    const P = summary.polling;

    console.log(
      `\npush-to-apply benchmark — node ${process.version}, ${machine().cpu.count} × ${machine().cpu.model ?? 'cpu'}; ${n} components, ` +
        `${signed ? 'signed (minisign key, --trusted-key)' : 'unsigned (--allow-unsigned)'}, ${pushes} pushes per mode; ms from \`git push\` returning`,
    );
    const col = (x: number | null) => fmt(x).padStart(7);
    const heads = modes.map((m) => (m === 'webhook' ? 'webhook' : `polling ${opts.poll}`).padEnd(15));
    console.log(`${''.padEnd(40)} ${heads.map((x) => `${x.padStart(15)}`).join(' │ ')}`);
    console.log(`${'measure'.padEnd(40)} ${modes.map(() => `${'p50'.padStart(7)} ${'p95'.padStart(7)}`).join(' │ ')}`);
    const rows: [string, 'newRevisionMs' | 'startMs' | 'doneMs'][] = [
      ['push → new revision (noticed, fetched)', 'newRevisionMs'],
      ['push → reconcile plan (apply starts)', 'startMs'],
      ['push → all components running (done)', 'doneMs'],
    ];
    for (const [label, key] of rows)
      console.log(
        `${label.padEnd(40)} ${modes.map((m) => `${col(summary[m]![key].p50)} ${col(summary[m]![key].p95)}`).join(' │ ')}`,
      );
    console.log('');
    if (W) {
      console.log(
        `webhook: apply starts p50 ${fmt(W.startMs.p50)} ms = ${ratio(W.startMs.p50, W.nativeFetchMs!.p50)} a native \`git fetch --depth=1\` of the same push ` +
          `(p50 ${fmt(W.nativeFetchMs!.p50)} ms, measured after each apply)`,
      );
      const st = W.stagesMs;
      console.log(
        `  where it goes (medians): push → POST sent ${fmt(st.pushToHookSent, 1)}, → agent logs the webhook ${fmt(st.hookSentToLogged, 1)}, ` +
          `look (ls-refs + fetch + ancestry) ${fmt(st.look)}, verify + load + diff ${fmt(st.verifyLoadDiff)}, then the restart ${fmt(st.restartOne)} ms`,
      );
    }
    if (P) {
      console.log(
        `polling ${opts.poll}: apply starts mean ${fmt(P.startMs.mean)} ms, p50 ${fmt(P.startMs.p50)} ms = ${ratio(P.startMs.mean, pollMs / 2)} / ${ratio(P.startMs.p50, pollMs / 2)} ` +
          `the expected mean wait for the next poll (P/2 = ${fmt(pollMs / 2)} ms); verify + load + diff ${fmt(P.stagesMs.verifyLoadDiff)}, restart ${fmt(P.stagesMs.restartOne)} ms`,
      );
    }
    if (W)
      console.log(
        `aim: a webhook push starts applying in under a second: p50 ${aims.webhookStartUnder1s!.p50 ? 'met' : 'MISSED'}, p95 ${aims.webhookStartUnder1s!.p95 ? 'met' : 'MISSED'}`,
      );
    for (const [mode, s] of Object.entries(summary)) {
      if (!s.restartedOnlyTheBumped)
        console.log(`warning: ${mode}: some apply restarted more than the bumped component`);
      if (s.outcomes.some((o) => o !== 'all components running'))
        console.log(`warning: ${mode}: outcomes ${s.outcomes.join(', ')}`);
      for (const w of byMode[mode]!.warnings) console.log(`warning: ${mode}: the agent logged "${w}"`);
    }
    if (pushes < 20)
      console.log(
        `note: ${pushes} pushes per mode: p95 is the ${pushes <= 10 ? 'slowest or next-slowest' : 'second-slowest'} sample (nearest rank)`,
      );
    const note = busyNote(othersPercent, loadBefore, loadAfter);
    if (note) console.log(note);

    ensureDir(join(benchDir, 'results'));
    writeFileSync(
      resultsFile,
      JSON.stringify(
        {
          ...resultsHead('push-to-apply', { loadBefore, loadAfter, othersPercent, withGit: true }),
          components: n,
          signed,
          pushesPerMode: pushes,
          command:
            'keystone agent --repo http://127.0.0.1:PORT/fleet.git --ref main --plan plans/plan.toml ' +
            `${signed ? '--trusted-key K.pub' : '--allow-unsigned'} --state-dir FRESH --listen 127.0.0.1:${apiPort} --log-format json --status none --stop-on-exit ` +
            '--poll 10m --webhook-secret-file F (webhook) | --poll P (polling)',
          measure:
            'from `git push` (to the bare repository served by git http-backend) returning to the agent\'s "reconcile plan" line for that commit (startMs) ' +
            'and to the "all components running" line after it (doneMs), by the agent\'s log timestamps; one component restarts per push',
          references: {
            webhook:
              'native `git fetch --depth=1 --no-tags` of the same push in a shallow bare clone, run after each apply',
            polling: 'P/2, the expected mean wait for the next poll when pushes land uniformly across the cycle',
          },
          summary,
          ratios: references,
          aims,
          samples: Object.values(byMode).flatMap((m) =>
            m.samples.map((s) =>
              Object.fromEntries(
                Object.entries(s)
                  .filter(([key]) => !key.endsWith('At'))
                  .map(([key, v]) => [key, typeof v === 'number' ? round(v, 1) : v]),
              ),
            ),
          ),
          benchSeconds: round((performance.now() - tStart) / 1000, 1),
        },
        null,
        2,
      ) + '\n',
    );
    console.log(`\nwrote ${resultsFile} (bench took ${fmt((performance.now() - tStart) / 1000)} s)`);
  } finally {
    if (server.connected) server.send('exit');
    if (server.exitCode === null && server.signalCode === null)
      await Promise.race([new Promise((r) => server.once('exit', r)), sleep(5000)]);
    await killStragglers([], work);
    rmWork();
  }
}
