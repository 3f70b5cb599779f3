// Each agent setting is checked in one place, once: the rule of its key (agent-config-rules.ts), which the
// configuration file's value and the flag's both go through, in their own words (the file: path, TOML path, line; the
// flag: its message), exit 2 either way; agent-settings.ts converts and judges nothing. The rules are counted with a
// wrapper around each, over a real file in a temp directory and the real `keystone` entry point in-process.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { COMBINATIONS } from '../../src/cli/agent-config-combinations.js';
import { CONFIG_RULES, type Rule } from '../../src/cli/agent-config-rules.js';
import { parseAgentConfig } from '../../src/cli/agent-config.js';
import { checkAgentFlags, checkFlag } from '../../src/cli/agent-flags.js';
import { AGENT_OPTIONS, parseAgentOptions, type AgentOptionName } from '../../src/cli/agent-options.js';
import { agentSettings } from '../../src/cli/agent-settings.js';
import type { CliIo } from '../../src/cli/io.js';
import { main } from '../../src/cli/keystone.js';

let root: string;
let repoDir: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'keystone-rules-once-'));
  repoDir = join(root, 'repo');
  mkdirSync(repoDir);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const io = (): CliIo => ({ stdout: { write: () => true }, stderr: { write: () => true }, cwd: root, env: {} });

async function keystone(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(
    args,
    {
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: (s: string) => (stderr += s) },
      cwd: root,
      env: {},
    },
    { once: () => {} },
  );
  return { code, stdout, stderr };
}

let n = 0;
function configFile(text: string): string {
  const file = join(root, `agent${++n}.toml`);
  writeFileSync(file, text, { mode: 0o600 });
  return file;
}

/** How many times each key's rule ran, while counting. */
const calls = new Map<string, number>();
const originals = { ...CONFIG_RULES };
function countRules(): void {
  calls.clear();
  for (const key of Object.keys(CONFIG_RULES) as AgentOptionName[]) {
    const rule = originals[key];
    (CONFIG_RULES as Record<string, Rule>)[key] = (raw, at) => {
      calls.set(key, (calls.get(key) ?? 0) + 1);
      return rule(raw, at);
    };
  }
}
afterEach(() => Object.assign(CONFIG_RULES, originals));

describe('one rule per flag', () => {
  it('every flag of `keystone agent --help` has exactly one rule, and every rule a flag', async () => {
    const help = await keystone(['agent', '--help']);
    // On stdout when asked for (exit 0), or after a refusal on stderr: either way the usage the command prints.
    const out = help.stdout + help.stderr;
    expect(out).toContain('usage: keystone agent');
    const usage = out.slice(out.indexOf('usage: keystone agent'));
    const flags = [...new Set([...usage.matchAll(/--(no-)?([a-z][a-z-]*[a-z])/g)].map((m) => m[2]!))].filter(
      (f) => f !== 'config',
    );
    expect(flags.length).toBeGreaterThan(40);
    expect(flags.sort()).toEqual(Object.keys(CONFIG_RULES).sort());
    expect(Object.keys(CONFIG_RULES).sort()).toEqual(Object.keys(AGENT_OPTIONS).sort());
    // A combination names only keys that have a rule.
    for (const c of COMBINATIONS) for (const key of c.keys) expect(Object.keys(CONFIG_RULES)).toContain(key);
  });
});

describe('a value is checked once, by its rule, whichever way it came', () => {
  it('a file value by its rule as the file is read, a flag by the same rule, and agent-settings by none', () => {
    const file = configFile(
      `dir = ${JSON.stringify(repoDir)}\nallow-unsigned = true\nlisten = "none"\nconcurrency = 3\nlog-format = "json"\ngrace = "5s"\n`,
    );
    countRules();
    const argv = ['--config', file, '--grace', '2s', '--on-failure', 'none', '--state-dir', join(root, 'state')];
    const parsed = parseAgentOptions(argv, io());
    // The file's six keys, each once.
    expect(Object.fromEntries(calls)).toEqual({
      dir: 1,
      'allow-unsigned': 1,
      listen: 1,
      concurrency: 1,
      'log-format': 1,
      grace: 1,
    });
    const checked = checkAgentFlags(argv, parsed, io());
    // The three flags, once each; the file's values are not looked at again (grace: the file's, then the flag's).
    expect(Object.fromEntries(calls)).toEqual({
      dir: 1,
      'allow-unsigned': 1,
      listen: 1,
      concurrency: 1,
      'log-format': 1,
      grace: 2,
      'on-failure': 1,
      'state-dir': 1,
    });
    const before = new Map(calls);
    const settings = agentSettings(checked, io());
    expect(calls).toEqual(before);
    // Flags win over the file; the file's values are taken as they were checked.
    expect(settings.run.graceMs).toBe(2000);
    expect(settings.run.concurrency).toBe(3);
    expect(settings.logFormat).toBe('json');
    expect(settings.run.stateDir).toBe(join(root, 'state'));
  });

  it('without a file, only the flags given are checked; the defaults are not values anyone gave', () => {
    countRules();
    const argv = ['--dir', repoDir, '--allow-unsigned'];
    checkAgentFlags(argv, parseAgentOptions(argv, io()), io());
    expect(Object.fromEntries(calls)).toEqual({ dir: 1, 'allow-unsigned': 1 });
  });
});

/** A bad value per key, refused by its rule: by the file with its line, by the flag in the flag's words. */
const BAD: Array<{
  key: AgentOptionName;
  value: string;
  base?: 'repo';
  flag: string | RegExp;
  file: string;
  code: string;
}> = [
  {
    key: 'on-failure',
    value: 'retry',
    base: 'repo',
    flag: '--on-failure must be none or rollback, not "retry"',
    file: '"retry" is not allowed',
    code: 'KS_INVALID_VALUE',
  },
  {
    key: 'log-format',
    value: 'text',
    flag: '--log-format must be pretty or json, not "text"',
    file: '"text" is not allowed',
    code: 'KS_INVALID_VALUE',
  },
  {
    key: 'concurrency',
    value: '0',
    flag: '--concurrency must be a whole number ≥ 1, not "0"',
    file: 'must be at least 1',
    code: 'KS_INVALID_VALUE',
  },
  {
    key: 'poll',
    value: '0s',
    base: 'repo',
    flag: '--poll takes a duration such as 60s, not "0s"',
    file: '"0s" must be more than zero',
    code: 'KS_BAD_DURATION',
  },
  {
    key: 'grace',
    value: 'long',
    flag: '--grace and --settle take durations such as 10s',
    file: '"long" is not a duration',
    code: 'KS_BAD_DURATION',
  },
  {
    key: 'crash-loop-limit',
    value: 'ten',
    flag: '--max-backoff and --healthy-spell take durations, --crash-loop-limit a whole number ≥ 1',
    file: 'string "ten" is not a whole number',
    code: 'KS_INVALID_VALUE',
  },
  {
    key: 'log-keep',
    value: 'many',
    flag: '--log-keep must be a whole number ≥ 1, not "many"',
    file: 'string "many" is not a whole number',
    code: 'KS_INVALID_VALUE',
  },
  {
    key: 'device',
    value: 'edge 7',
    flag: /^--device: "edge 7" is not a device name \(one word/,
    file: '"edge 7" is not a device name',
    code: 'KS_BAD_NAME',
  },
  {
    key: 'status',
    value: 'git-notes,email',
    base: 'repo',
    flag: '--status takes git-notes, github or none, not "email"',
    file: '"email" is not a status reporter',
    code: 'KS_INVALID_VALUE',
  },
  {
    key: 'github-repo',
    value: 'acme',
    base: 'repo',
    flag: '--github-repo must be OWNER/REPO, not "acme"',
    file: '"acme" is not OWNER/REPO',
    code: 'KS_INVALID_VALUE',
  },
  {
    key: 'window',
    value: 'mon 02:00-04:00',
    flag: /^--window: "mon 02:00-04:00" is not a window/,
    file: '"mon 02:00-04:00" is not a window',
    code: 'KS_INVALID_VALUE',
  },
  {
    key: 'listen',
    value: '8080',
    flag: '--listen takes HOST:PORT (e.g. 127.0.0.1:8080, [::1]:8080) or none, not "8080"',
    file: '"8080" is not HOST:PORT or none',
    code: 'KS_INVALID_VALUE',
  },
];

describe('a bad value is refused by the same rule, from the command line and from the file', () => {
  for (const c of BAD) {
    it(`${c.key} = ${JSON.stringify(c.value)}`, async () => {
      const base = c.base === 'repo' ? ['--repo', 'https://git.example.com/acme/edge.git'] : ['--dir', repoDir];
      countRules();
      // A flag given twice: the last wins (for --listen, the bad one).
      const flag = await keystone([
        'agent',
        ...base,
        '--allow-unsigned',
        '--listen',
        'none',
        '--state-dir',
        join(root, 'never'),
        `--${c.key}`,
        c.value,
      ]);
      expect(flag.code, flag.stderr).toBe(2);
      const first = flag.stderr.split('\n')[0]!;
      expect(first.startsWith('keystone agent: ')).toBe(true);
      if (typeof c.flag === 'string') expect(first).toBe(`keystone agent: ${c.flag}`);
      else expect(first.slice('keystone agent: '.length)).toMatch(c.flag);
      expect(calls.get(c.key)).toBeGreaterThanOrEqual(1);

      const source =
        c.base === 'repo' ? 'repo = "https://git.example.com/acme/edge.git"' : `dir = ${JSON.stringify(repoDir)}`;
      const text = `${source}\nallow-unsigned = true\n${c.key === 'listen' ? '' : 'listen = "none"\n'}${c.key} = ${JSON.stringify(c.value)}\n`;
      const file = configFile(text);
      countRules();
      const fromFile = await keystone(['agent', '--config', file]);
      expect(fromFile.code, fromFile.stderr).toBe(2);
      const line = c.key === 'listen' ? 3 : 4;
      expect(fromFile.stderr).toContain(`${file}:${line}: ${c.key}: ${c.file}`);
      expect(fromFile.stderr).toContain(`[${c.code}]`);
      expect(fromFile.stderr).toContain('(1 error)');
      expect(calls.get(c.key)).toBe(1);
      // The same rule, called directly, in the flag's voice.
      expect(() => checkFlag(c.key, c.value, io())).toThrow();
      expect(parseAgentConfig(join(root, 'x.toml'), text).diagnostics.map((d) => d.path)).toEqual([c.key]);
    });
  }
});

describe('combinations, in both voices', () => {
  it('a Git-only flag with --dir, and the same key with dir in the file', async () => {
    const flag = await keystone(['agent', '--dir', repoDir, '--allow-unsigned', '--listen', 'none', '--poll', '5s']);
    expect(flag.code).toBe(2);
    expect(flag.stderr.split('\n')[0]).toBe('keystone agent: --poll is for a Git source (--repo), not --dir');
    const file = configFile(`dir = ${JSON.stringify(repoDir)}\nallow-unsigned = true\nlisten = "none"\npoll = "5s"\n`);
    const fromFile = await keystone(['agent', '--config', file]);
    expect(fromFile.code).toBe(2);
    expect(fromFile.stderr).toContain(`${file}:4: poll: poll is for a Git source (repo), not dir [KS_CONFIG_CONFLICT]`);
  });

  it('a flag that changes a combination of the file is checked with it: --no-listen-public under a public listen', async () => {
    const file = configFile(
      `dir = ${JSON.stringify(repoDir)}\nallow-unsigned = true\nlisten = "0.0.0.0:0"\nlisten-public = true\n`,
    );
    const r = await keystone(['agent', '--config', file, '--no-listen-public']);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toBe(
      'keystone agent: --listen 0.0.0.0:0 is not a loopback address: add --listen-public to expose the API beyond this machine',
    );
  });
});
