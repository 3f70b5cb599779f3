// The example workflow .github/workflows/apply-dry.yml, held to the CLI it drives. No YAML library is a dependency,
// so steps are cut out of the text by indentation (the file's own layout, which these tests pin). Its keystonectl
// lines must use flags the commands really have (a rename breaks this test), and its shell steps run for real under
// bash against a Git repository with origin/main, through bin/keystonectl.js (run `npm run build` first); its
// github-script step runs against a recording stand-in for the GitHub client.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { APPLY_DRY_USAGE } from '../../src/cli/commands/apply-dry.js';
import { GRAPH_USAGE } from '../../src/cli/commands/graph.js';
import { exampleRepo, PROJECT_ROOT, type ExampleRepo } from '../support/example-repo.js';

const WORKFLOW = readFileSync(join(PROJECT_ROOT, '.github/workflows/apply-dry.yml'), 'utf8');
const MARKER = '<!-- keystone-apply-dry -->';

interface Step {
  name: string;
  text: string;
  /** The `run: |` block, dedented; '' when the step has none. */
  run: string;
  /** The `script: |` block of a github-script step, dedented. */
  script: string;
  env: Record<string, string>;
}

/** A `key: |` block under a step (every following line indented deeper than the key), or a one-line `key: value`. */
function block(lines: string[], key: string): string {
  const inline = lines.map((l) => new RegExp(`^\\s*${key}: (?!\\|$)(.+)$`).exec(l)).find(Boolean);
  if (inline) return inline[1]! + '\n';
  const at = lines.findIndex((l) => new RegExp(`^\\s*${key}: \\|$`).test(l));
  if (at < 0) return '';
  const indent = /^\s*/.exec(lines[at]!)![0].length;
  const body: string[] = [];
  for (const l of lines.slice(at + 1)) {
    if (l.trim() !== '' && /^\s*/.exec(l)![0].length <= indent) break;
    body.push(l);
  }
  const cut = Math.min(...body.filter((l) => l.trim()).map((l) => /^\s*/.exec(l)![0].length));
  return (
    body
      .map((l) => l.slice(cut))
      .join('\n')
      .trimEnd() + '\n'
  );
}

/** `env:` of a step (or the job): the `KEY: value` lines right under it. */
function envOf(lines: string[], indent: number): Record<string, string> {
  const at = lines.findIndex((l) => l === `${' '.repeat(indent)}env:`);
  const out: Record<string, string> = {};
  if (at < 0) return out;
  for (const l of lines.slice(at + 1)) {
    const m = new RegExp(`^ {${indent + 2}}([A-Z_]+): (.*)$`).exec(l);
    if (m) out[m[1]!] = m[2]!;
    else if (!new RegExp(`^ {${indent + 4},}|^ {${indent + 2}}#`).test(l)) break;
  }
  return out;
}

function steps(): Step[] {
  const all = WORKFLOW.split('\n');
  const starts = all.flatMap((l, i) => (/^ {6}- /.test(l) ? [i] : []));
  return starts.map((s, k) => {
    const lines = all.slice(s, starts[k + 1] ?? all.length);
    const name = /^ {6}- (?:name: (.*)|uses: (.*))$/.exec(lines[0]!)!;
    return {
      name: (name[1] ?? name[2])!,
      text: lines.join('\n'),
      run: block(lines, 'run'),
      script: block(lines, 'script'),
      env: envOf(lines, 8),
    };
  });
}

const step = (name: string) => {
  const s = steps().find((x) => x.name === name);
  if (!s) throw new Error(`no step "${name}" in the workflow`);
  return s;
};

/** Each `keystonectl …` command line of a script, continuations joined, as words (quotes kept). */
function keystonectlCalls(script: string): string[][] {
  return script
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .flatMap((l) => {
      // Commands only: not the comments or the messages that mention keystonectl.
      const m = /^\s*keystonectl (.*)$/.exec(l);
      return m
        ? [
            m[1]!
              .split(/\s+/)
              .filter(
                (w) =>
                  w &&
                  !w.startsWith('>') &&
                  !w.startsWith('2>') &&
                  w !== '||' &&
                  !/^code=/.test(w) &&
                  !w.startsWith('"$RUNNER_TEMP/dry'),
              ),
          ]
        : [];
    });
}

describe('the example workflow, as text', () => {
  it('runs on pull requests with the least permissions it needs, the whole history, Node 20', () => {
    expect(WORKFLOW).toMatch(/^on:\n {2}pull_request:\n/m);
    expect(WORKFLOW).toMatch(/^permissions:\n {2}contents: read\n {2}pull-requests: write\n/m);
    expect(step('actions/checkout@v4').text).toMatch(/fetch-depth: 0/);
    expect(step('actions/setup-node@v4').text).toMatch(/node-version: 20/);
    // keystonectl from a pinned tarball whose sha256 is checked before it is installed, without install scripts; never
    // a package name (the review of issue 34: `keystone` on npm is another project).
    const install = step('Install keystonectl').run;
    expect(install).toContain('sha256sum -c -');
    expect(install).toContain('npm install --ignore-scripts --global ./keystone-edge.tgz');
    expect(install.indexOf('sha256sum -c -')).toBeLessThan(install.indexOf('npm install'));
    expect(WORKFLOW).not.toMatch(/npm install -g "?\$KEYSTONE_PACKAGE|npm install (-g )?keystone\b/);
    // The trusted key comes from the repository's settings, never from the pull request.
    expect(step('Write the trusted key').env).toEqual({ KEYSTONE_TRUSTED_KEY: '${{ vars.KEYSTONE_TRUSTED_KEY }}' });
    // The base ref reaches the script through the environment, not pasted into shell code.
    expect(step('Dry run').env).toEqual({ BASE_REF: '${{ github.base_ref }}' });
    expect(step('Dry run').run).not.toContain('${{');
  });

  it('calls keystonectl only with flags and values the commands have', () => {
    const calls = keystonectlCalls(step('Dry run').run);
    expect(calls.map((c) => c[0])).toEqual(['apply-dry', 'apply-dry', 'graph']);
    const usage: Record<string, string> = { 'apply-dry': APPLY_DRY_USAGE, graph: GRAPH_USAGE };
    for (const [command, ...words] of calls) {
      const flags = words.filter((w) => w.startsWith('--'));
      expect(flags.length, command).toBeGreaterThan(0);
      for (const f of flags) expect(usage[command!], `${command} ${f}`).toContain(`${f} `);
      const format = words[words.indexOf('--format') + 1]!;
      expect(usage[command!]).toMatch(new RegExp(`--format [a-z|]*\\b${format}\\b`));
    }
    const [fleet, applyDry, graph] = calls;
    // A fleet repository: one run for every target; otherwise one per plan, each with its graph.
    expect(fleet).toEqual([
      'apply-dry',
      '--fleet',
      '--base',
      '"origin/$BASE_REF"',
      '--trusted-key',
      '"$key"',
      '--format',
      'markdown',
    ]);
    expect(applyDry).toEqual([
      'apply-dry',
      '"$plan"',
      '--base',
      '"origin/$BASE_REF"',
      '--trusted-key',
      '"$key"',
      '--format',
      'markdown',
    ]);
    expect(graph).toEqual(['graph', '"$plan"', '--trusted-key', '"$key"', '--format', 'mermaid']);
  });

  it('takes the fleet branch exactly when the checkout has a fleet.toml, the per-plan loop otherwise', () => {
    const run = step('Dry run').run;
    const branch = /^if \[ -f fleet\.toml \]; then\n([\s\S]*?)^else\n([\s\S]*?)^fi$/m.exec(run);
    expect(branch, run).not.toBeNull();
    expect(branch![1]).toContain('keystonectl apply-dry --fleet ');
    expect(branch![1]).not.toContain('$KEYSTONE_PLANS');
    expect(branch![2]).toMatch(/^ {2}for plan in \$KEYSTONE_PLANS; do$/m);
  });

  it('comments once per pull request (a hidden marker), fails the job on a non-zero exit', () => {
    expect(step('Dry run').run).toContain(`'${MARKER}'`);
    expect(step('Post or update the pull-request comment').text).toContain('uses: actions/github-script@v7');
    expect(step('Post or update the pull-request comment').script).toContain(`'${MARKER}'`);
    const fail = step('Fail on an invalid, unsigned or untrusted change');
    expect(fail.text).toContain("if: steps.dry.outputs.exit != '0'");
    expect(fail.run).toMatch(/exit 1\n$/);
  });
});

describe('the example workflow, run', () => {
  let repo: ExampleRepo;
  let runner: string;
  beforeEach(async () => {
    repo = await exampleRepo();
    // What actions/checkout with fetch-depth 0 leaves: the pull request checked out, the base as origin/main.
    const remote = join(repo.keyDir, 'remote.git');
    repo.git('init', '-q', '--bare', remote);
    repo.git('remote', 'add', 'origin', remote);
    repo.git('push', '-q', 'origin', 'main');
    repo.git('fetch', '-q', 'origin');
    repo.git('checkout', '-q', '-b', 'change');
    runner = mkdtempSync(join(tmpdir(), 'keystone-runner-'));
    // The installed tarball stands in as a keystonectl on PATH: this checkout's build.
    mkdirSync(join(runner, 'bin'));
    writeFileSync(
      join(runner, 'bin/keystonectl'),
      `#!/bin/sh\nexec "${process.execPath}" "${join(PROJECT_ROOT, 'bin/keystonectl.js')}" "$@"\n`,
    );
    chmodSync(join(runner, 'bin/keystonectl'), 0o755);
  });
  afterEach(() => {
    repo.cleanup();
    rmSync(runner, { recursive: true, force: true });
  });

  /** Runs a step's script as Actions does (bash -eo pipefail) with the job's and the step's env; returns its outputs. */
  function runStep(name: string, env: Record<string, string>) {
    const s = step(name);
    const file = join(runner, 'step.sh');
    writeFileSync(file, s.run);
    writeFileSync(join(runner, 'output'), '');
    const job = envOf(WORKFLOW.split('\n'), 4);
    const r = spawnSync('bash', ['--noprofile', '--norc', '-eo', 'pipefail', file], {
      cwd: repo.dir,
      encoding: 'utf8',
      env: {
        PATH: `${join(runner, 'bin')}:${process.env.PATH}`,
        HOME: runner,
        RUNNER_TEMP: runner,
        GITHUB_OUTPUT: join(runner, 'output'),
        GITHUB_STEP_SUMMARY: join(runner, 'summary'),
        ...job,
        ...env,
      },
    });
    const outputs = Object.fromEntries(
      readFileSync(join(runner, 'output'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(/=(.*)/s, 2) as [string, string]),
    );
    return { status: r.status, stderr: r.stderr, outputs };
  }

  const prepare = () => {
    const key = runStep('Write the trusted key', {
      KEYSTONE_TRUSTED_KEY: readFileSync(repo.trust[1]!, 'utf8').trimEnd(),
    });
    expect(key.status, key.stderr).toBe(0);
    expect(readFileSync(join(runner, 'keystone-trusted.pub'), 'utf8')).toBe(readFileSync(repo.trust[1]!, 'utf8'));
  };

  it('a valid change: every plan reported with its Mermaid graph in a fence, the summary too, exit 0', async () => {
    repo.edit('recipes/com.acme.api.toml', 'version = "1.4.0"', 'version = "1.5.0"');
    await repo.sign();
    repo.commit('api 1.5.0');
    prepare();
    const r = runStep('Dry run', { BASE_REF: 'main' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.outputs.exit).toBe('0');
    const report = readFileSync(r.outputs.report!, 'utf8');
    expect(readFileSync(join(runner, 'summary'), 'utf8')).toBe(report);
    expect(report.startsWith(`${MARKER}\n\n### Keystone dry run: \`plans/edge-gateway.toml\``)).toBe(true);
    expect(report).toContain('### Keystone dry run: `plans/edge-processes.toml`');
    expect(report).toContain('### Keystone dry run: `plans/edge.toml`');
    expect(report.match(/\| `api` \| restart \| version 1\.4\.0 → 1\.5\.0 \|/g)).toHaveLength(3);
    const fences = [...report.matchAll(/^```mermaid\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
    expect(fences).toHaveLength(3);
    for (const f of fences) {
      expect(f.startsWith('flowchart TB\n')).toBe(true);
      expect(f).toContain('c0_influxdb -- "hard" --> c1_api');
    }
    expect(report).toContain(
      '<details><summary>Dependency graph of <code>plans/edge.toml</code></summary>\n\n```mermaid\n',
    );
  });

  it('an invalid change: the errors are reported, no graph, and the step says 2', async () => {
    repo.edit('recipes/com.acme.web.toml', 'name = "com.acme.api"', 'name = "com.acme.nothing"');
    await repo.sign();
    repo.commit('broken');
    prepare();
    const r = runStep('Dry run', { BASE_REF: 'main' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.outputs.exit).toBe('2');
    const report = readFileSync(r.outputs.report!, 'utf8');
    expect(report).toContain('### Keystone dry run: `plans/edge.toml` is invalid');
    expect(report).toMatch(/`recipes\/com\.acme\.web\.toml:\d+` `dependencies\[0\]\.name` .*`KS_DEP_MISSING`/);
    // edge-processes.toml and edge-gateway.toml run web as a process, from another recipe: still valid, still reported
    // with their graphs.
    expect(report).toContain('### Keystone dry run: `plans/edge-processes.toml`\n');
    expect(report).toContain('### Keystone dry run: `plans/edge-gateway.toml`\n');
    expect(report.match(/^```mermaid$/gm)).toHaveLength(2);
  });

  it('an unsigned edit: the refusal is in the report, and the step says 2', () => {
    repo.edit('recipes/com.acme.api.toml', 'version = "1.4.0"', 'version = "1.5.0"');
    repo.commit('not re-signed');
    prepare();
    const r = runStep('Dry run', { BASE_REF: 'main' });
    expect(r.outputs.exit).toBe('2');
    expect(readFileSync(r.outputs.report!, 'utf8')).toContain('`KS_DIGEST_MISMATCH`');
  });

  it('a failure keystonectl reports only on stderr still reaches the report (a base that does not exist: exit 1)', () => {
    prepare();
    const r = runStep('Dry run', { BASE_REF: 'no-such-branch' });
    expect(r.outputs.exit).toBe('1');
    expect(readFileSync(r.outputs.report!, 'utf8')).toMatch(
      /\*\*`keystonectl apply-dry plans\/edge\.toml` exited with 1:\*\*\n\n````text\nkeystonectl apply-dry: .+\n````/,
    );
  });

  describe('a fleet repository (fleet.toml at the root)', () => {
    const FLEET = [
      '[[targets]]',
      'name = "pi4-eu"',
      'selector = { hw = "pi4", region = "eu" }',
      'plan = "plans/edge.toml"',
      '',
      '[[targets]]',
      'name = "gateways"',
      'selector = { role = "gateway" }',
      'plan = "plans/edge-gateway.toml"',
      'config = { gateway = { proxy = { listen = 19091 } } }',
      '',
    ].join('\n');

    /** The base branch gains fleet.toml: origin/main as the pull request's base. */
    const baseHasFleet = async () => {
      writeFileSync(join(repo.dir, 'fleet.toml'), FLEET);
      await repo.sign();
      repo.commit('fleet.toml');
      repo.git('push', '-q', 'origin', 'change:main');
      repo.git('fetch', '-q', 'origin');
    };

    it('one report for the whole fleet: a section per target, no per-plan sections or graphs, exit 0', async () => {
      await baseHasFleet();
      repo.edit('recipes/com.acme.api.toml', 'version = "1.4.0"', 'version = "1.5.0"');
      repo.edit('fleet.toml', 'listen = 19091', 'listen = 19092');
      await repo.sign();
      repo.commit('api 1.5.0, gateways on 19092');
      prepare();
      const r = runStep('Dry run', { BASE_REF: 'main' });
      expect(r.status, r.stderr).toBe(0);
      expect(r.outputs.exit).toBe('0');
      const report = readFileSync(r.outputs.report!, 'utf8');
      expect(readFileSync(join(runner, 'summary'), 'utf8')).toBe(report);
      expect(
        report.startsWith(
          `${MARKER}\n\n## Keystone dry run: \`fleet.toml\` (2 targets)\n\nCompared with \`origin/main\``,
        ),
      ).toBe(true);
      expect(report.match(/^### target .*$/gm)).toEqual([
        '### target pi4-eu — plans/edge.toml',
        '### target gateways — plans/edge-gateway.toml',
      ]);
      expect(report.match(/\| `api` \| restart \| version 1\.4\.0 → 1\.5\.0 \|/g)).toHaveLength(2);
      expect(report).toContain('| `gateway/proxy` | restart | configuration changed: config.listen 19091 → 19092 |');
      expect(report).not.toContain('### Keystone dry run: `plans/');
      expect(report).not.toContain('```mermaid');
    });

    it('fleet.toml added by the pull request: every target is new, compared with the empty state', async () => {
      writeFileSync(join(repo.dir, 'fleet.toml'), FLEET);
      await repo.sign();
      repo.commit('fleet.toml');
      prepare();
      const r = runStep('Dry run', { BASE_REF: 'main' });
      expect(r.outputs.exit, r.stderr).toBe('0');
      const report = readFileSync(r.outputs.report!, 'utf8');
      expect(report).toContain(', where `fleet.toml` does not exist yet.');
      expect(report.match(/^New target: compared with the empty state\./gm)).toHaveLength(2);
    });

    it('an invalid fleet.toml: its errors with file and line in the report, and the step says 2', async () => {
      await baseHasFleet();
      writeFileSync(join(repo.dir, 'fleet.toml'), FLEET.replace('name = "gateways"', 'name = "pi4-eu"'));
      await repo.sign();
      repo.commit('two targets, one name');
      prepare();
      const r = runStep('Dry run', { BASE_REF: 'main' });
      expect(r.outputs.exit, r.stderr).toBe('2');
      const report = readFileSync(r.outputs.report!, 'utf8');
      expect(report).toContain('### Keystone dry run: `fleet.toml` is invalid\n');
      expect(report).toMatch(
        /- `fleet\.toml:7` `targets\[1\]\.name` target "pi4-eu" is declared twice .*`KS_FLEET_DUPLICATE_TARGET`/,
      );
    });

    it('a failure reported only on stderr still reaches the report (a base that does not exist: exit 1)', async () => {
      writeFileSync(join(repo.dir, 'fleet.toml'), FLEET);
      await repo.sign();
      repo.commit('fleet.toml');
      prepare();
      const r = runStep('Dry run', { BASE_REF: 'no-such-branch' });
      expect(r.outputs.exit).toBe('1');
      expect(readFileSync(r.outputs.report!, 'utf8')).toMatch(
        /\*\*`keystonectl apply-dry --fleet` exited with 1:\*\*\n\n````text\nkeystonectl apply-dry: .+KS_GIT_REF_NOT_FOUND.*\n````/,
      );
    });
  });

  it('without the repository variable the key step fails and says what to set', () => {
    const r = runStep('Write the trusted key', { KEYSTONE_TRUSTED_KEY: '' });
    expect(r.status).toBe(1);
  });

  it('the comment step creates the comment once, then updates it', async () => {
    const body = `${MARKER}\n\nreport\n`;
    const reportFile = join(runner, 'report.md');
    writeFileSync(reportFile, body);
    const comments: Array<{ id: number; body: string; user: { type: string } }> = [
      { id: 1, body: 'LGTM', user: { type: 'User' } },
    ];
    const calls: string[] = [];
    const github = {
      paginate: async (fn: (o: object) => Promise<{ data: unknown[] }>, o: object) => (await fn(o)).data,
      rest: {
        issues: {
          listComments: async () => ({ data: comments.map((c) => ({ ...c })) }),
          createComment: async (o: { issue_number: number; body: string }) => {
            calls.push(`create #${o.issue_number}`);
            comments.push({ id: comments.length + 1, body: o.body, user: { type: 'Bot' } });
          },
          updateComment: async (o: { comment_id: number; body: string }) => {
            calls.push(`update ${o.comment_id}`);
            comments.find((c) => c.id === o.comment_id)!.body = o.body;
          },
        },
      },
    };
    const context = { repo: { owner: 'acme', repo: 'fleet' }, issue: { number: 7 } };
    const s = step('Post or update the pull-request comment');
    expect(s.env).toEqual({ REPORT: '${{ steps.dry.outputs.report }}' });
    const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (
      ...args: string[]
    ) => (...a: unknown[]) => Promise<void>;
    // As actions/github-script runs it: the body of an async function given require, github and context.
    const run = new AsyncFunction('require', 'github', 'context', 'process', s.script);
    const proc = { env: { REPORT: reportFile } };
    await run(createRequire(import.meta.url), github, context, proc);
    writeFileSync(reportFile, `${MARKER}\n\nreport, second push\n`);
    await run(createRequire(import.meta.url), github, context, proc);
    expect(calls).toEqual(['create #7', 'update 2']);
    expect(comments.map((c) => c.body)).toEqual(['LGTM', `${MARKER}\n\nreport, second push\n`]);
  });
});

// Keeps the helper honest: a workflow without the keystonectl shim would silently test nothing.
it('the keystonectl build exists for the run tests (npm run build)', () => {
  expect(
    execFileSync(process.execPath, [join(PROJECT_ROOT, 'bin/keystonectl.js'), 'help'], { encoding: 'utf8' }),
  ).toContain('apply-dry');
});
