// What the agent loads (issue 16): a device pays in memory only for the features it uses. The real agent
// (bin/keystone.js) runs with a module loader hook that writes every URL loaded to a file; the features it does not
// use must not appear: the HTTP API (src/api/) with `--listen none`, Git (isomorphic-git) in directory
// mode, artifacts (tar, yauzl) without a component that has some (nor to stage an agent update without one), chokidar
// when following Git.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentProcess, is, processesUnder } from '../support/agent-harness.js';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';

let hookDir: string;
let fx: StackFixture;

beforeAll(async () => {
  hookDir = mkdtempSync(join(tmpdir(), 'keystone-lazy-'));
  writeFileSync(
    join(hookDir, 'hooks.mjs'),
    "import { appendFileSync } from 'node:fs';\n" +
      'export async function load(url, context, next) {\n' +
      '  const r = await next(url, context);\n' +
      '  if (process.env.KEYSTONE_TEST_LOADED) appendFileSync(process.env.KEYSTONE_TEST_LOADED, url + "\\n");\n' +
      '  return r;\n' +
      '}\n',
  );
  writeFileSync(
    join(hookDir, 'register.mjs'),
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(hookDir, 'hooks.mjs')).href)});\n`,
  );
  fx = await stackFixture({ components: () => [sleeper('db')] });
});

afterAll(() => {
  fx?.cleanup();
  rmSync(hookDir, { recursive: true, force: true });
});

/** Runs the agent until its first apply ends, stops it, and returns every module URL it loaded. */
async function loadedBy(source: string[], args: string[]): Promise<string[]> {
  const stateDir = mkdtempSync(join(tmpdir(), 'keystone-lazy-state-'));
  const list = join(hookDir, `loaded-${Date.now()}-${Math.random().toString(36).slice(2)}.txt`);
  writeFileSync(list, '');
  const argv = [
    '--import',
    join(hookDir, 'register.mjs'),
    join(PROJECT_ROOT, 'bin', 'keystone.js'),
    'agent',
    ...source,
    '--plan',
    fx.plan,
    '--allow-unsigned',
    '--state-dir',
    stateDir,
    '--log-format',
    'json',
    '--stop-on-exit',
    ...args,
  ];
  const agent = new AgentProcess(
    spawn(process.execPath, argv, {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, KEYSTONE_TEST_LOADED: list },
    }),
  );
  try {
    await agent.waitForLog(is.applyEnd, 20_000, 0, 'the first apply');
    await agent.waitForLog(is.msg('agent started'), 5_000, 0, 'agent started');
    expect((await agent.stop()).code, agent.tail()).toBe(0);
  } finally {
    if (!agent.exit) await agent.kill9();
    for (const p of processesUnder(stateDir)) process.kill(p.pid, 'SIGKILL');
    rmSync(stateDir, { recursive: true, force: true });
  }
  return readFileSync(list, 'utf8').split('\n').filter(Boolean);
}

const packageLoaded = (urls: string[], name: string) => urls.some((u) => u.includes(`/node_modules/${name}/`));
const distLoaded = (urls: string[], file: string) => urls.some((u) => u.endsWith(`/dist/${file}`));

describe('the agent loads what a feature needs only when the feature is in use', () => {
  it('directory mode with --listen none: no HTTP server, no metrics, no Git, no archive readers', async () => {
    const urls = await loadedBy(['--dir', fx.dir], ['--listen', 'none']);
    expect(distLoaded(urls, 'cli/commands/agent.js')).toBe(true);
    for (const name of ['isomorphic-git', 'tar', 'yauzl']) expect(packageLoaded(urls, name), name).toBe(false);
    for (const file of [
      'api/build-server.js',
      'api/listen-api.js',
      'agent/follow-git.js',
      'source/git-source.js',
      'source/ref-lister.js',
      'runtime/artifact-installer.js',
      'agent-update/stage-agent-package.js',
      'artifacts/fetch-artifact.js',
    ])
      expect(distLoaded(urls, file), file).toBe(false);
    expect(distLoaded(urls, 'agent-update/agent-updater.js')).toBe(true);
    expect(packageLoaded(urls, 'chokidar')).toBe(true);
  });

  it('directory mode with the API on: the HTTP server, still no Git', async () => {
    const urls = await loadedBy(['--dir', fx.dir], ['--listen', '127.0.0.1:0']);
    expect(distLoaded(urls, 'api/build-server.js')).toBe(true);
    // The API is node:http and our own code: no HTTP framework or metrics library is loaded for it (issue 31).
    for (const name of ['fastify', 'prom-client', 'find-my-way']) expect(packageLoaded(urls, name), name).toBe(false);
    expect(packageLoaded(urls, 'isomorphic-git')).toBe(false);
  });

  it('following Git: isomorphic-git, no directory watcher', async () => {
    const repo = mkdtempSync(join(tmpdir(), 'keystone-lazy-repo-'));
    try {
      const env = {
        ...process.env,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
        GIT_AUTHOR_NAME: 't',
        GIT_AUTHOR_EMAIL: 't@t.invalid',
        GIT_COMMITTER_NAME: 't',
        GIT_COMMITTER_EMAIL: 't@t.invalid',
      };
      const git = (...a: string[]) => expect(spawnSync('git', a, { cwd: repo, env, encoding: 'utf8' }).status).toBe(0);
      spawnSync('cp', ['-r', `${fx.dir}/.`, repo]);
      git('init', '-q', '-b', 'main');
      git('add', '-A');
      git('commit', '-q', '-m', 'fixture');
      const urls = await loadedBy(['--repo', repo], ['--listen', 'none', '--poll', '1s', '--status', 'none']);
      expect(packageLoaded(urls, 'isomorphic-git')).toBe(true);
      expect(distLoaded(urls, 'agent/follow-git.js')).toBe(true);
      expect(packageLoaded(urls, 'chokidar')).toBe(false);
      expect(distLoaded(urls, 'api/build-server.js')).toBe(false);
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
  });
});
