// The agent's configuration file (src/cli/agent-config.ts, agent-config-rules.ts, agent-options.ts), written by an
// operator or a provisioning script: diagnostics with a KS_ code, the file, a TOML path and a line, or values of the
// types the agent's flags have. Folds in test/cli/agent-config.fuzz.test.ts (its key and value generators).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { AgentConfigError } from '../../../src/cli/agent-config-error.js';
import { parseAgentConfig, type AgentConfig } from '../../../src/cli/agent-config.js';
import { AGENT_OPTIONS, parseAgentOptions } from '../../../src/cli/agent-options.js';
import { UsageError } from '../../../src/cli/io.js';
import { holds, refusedWith, text, type FuzzTarget } from '../fuzz-target.js';

let dir = '';
let file = '';
const OPTIONS = AGENT_OPTIONS as Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>;

function setup(): void {
  dir = mkdtempSync(join(tmpdir(), 'keystone-fuzz-config-'));
  file = join(dir, 'agent.toml');
  copyFileSync(fileURLToPath(new URL('../fixtures/trust/a.pub', import.meta.url)), join(dir, 'release.pub'));
  writeFileSync(join(dir, 'token'), 'a-token\n');
  mkdirSync(join(dir, 'repo'));
}

/** The loader's contract, whatever it was given. */
function holdsFor(input: Uint8Array, result: AgentConfig): void {
  const lines = Buffer.from(input).toString('latin1').split('\n').length;
  for (const d of result.diagnostics) {
    holds(/^KS_[A-Z0-9_]+$/.test(d.code), `a diagnostic without a KS_ code: ${JSON.stringify(d)}`);
    holds(
      d.file === file && typeof d.path === 'string' && d.message.length > 0,
      `a diagnostic without its file, path or message: ${JSON.stringify(d)}`,
    );
    if (d.line !== undefined)
      holds(
        Number.isInteger(d.line) && d.line >= 1 && d.line <= lines,
        `line ${d.line} of ${lines}: ${JSON.stringify(d)}`,
      );
  }
  if (result.diagnostics.length) return;
  for (const [key, value] of Object.entries(result.values)) {
    const option = OPTIONS[key];
    holds(option !== undefined, `${key} is not an agent option`);
    if (option.type === 'boolean') holds(typeof value === 'boolean', `${key} is not a boolean`);
    else if (option.multiple)
      holds(Array.isArray(value) && value.every((v) => typeof v === 'string'), `${key} is not a list of strings`);
    else holds(typeof value === 'string', `${key} is not a string`);
  }
  holds(
    Object.hasOwn(result.values, 'repo') !== Object.hasOwn(result.values, 'dir'),
    'a valid configuration without exactly one of repo and dir',
  );
}

const KEYS = [
  ...Object.keys(AGENT_OPTIONS),
  'trusted-keys',
  'pol',
  'git-token',
  'webhook-secret',
  'password',
  'config',
  '__proto__',
  'constructor',
  'toString',
  'a.b',
  '',
];
const quoteKey = (k: string) => (/^[A-Za-z0-9_-]+$/.test(k) ? k : JSON.stringify(k));
const str = (s: string) => JSON.stringify(s);
const valueText = fc.oneof(
  fc.string({ maxLength: 12 }).map(str),
  fc.integer({ min: -3, max: 20 }).map(String),
  fc.constantFrom(
    'true',
    'false',
    '2.5',
    'inf',
    '1979-05-27',
    '{}',
    '{ a = 1 }',
    '[]',
    '[1, "x"]',
    '"""\nmulti\n"""',
    "'lit'",
    '',
    '=',
    '[',
    '"unterminated',
  ),
  fc
    .constantFrom(
      '10s',
      '0s',
      '300ms',
      '1h30m',
      '5x',
      '-1s',
      'none',
      'rollback',
      'json',
      'git-notes,github',
      '127.0.0.1:8080',
      '0.0.0.0:1',
      'CAP_NET_ADMIN',
      '/dev/ttyUSB0',
      '/srv/data',
    )
    .map(str),
  fc
    .constantFrom(
      'repo',
      '../repo',
      './release.pub',
      'release.pub',
      'token',
      'missing',
      '/proc/self/mem',
      'https://git.example.com/x.git',
      'https://u:p@h/x',
      'file:///tmp',
      'ghp_0123456789abcdefghij',
    )
    .map(str),
  fc
    .array(fc.constantFrom('role=gateway', 'site=lab', 'bad', 'release.pub', '/srv', 'CAP_CHOWN', ''), { maxLength: 3 })
    .map((xs) => `[${xs.map(str).join(', ')}]`),
);
const structured = fc
  .tuple(
    fc.boolean(),
    fc.uniqueArray(fc.tuple(fc.constantFrom(...KEYS), valueText), { selector: ([k]) => k, maxLength: 6 }),
    fc.array(
      fc.constantFrom(...KEYS).map((k) => `[${quoteKey(k)}]`),
      { maxLength: 2 },
    ),
  )
  .map(([base, pairs, tables]) => {
    const lines = pairs
      .filter(([k]) => !base || (k !== 'dir' && k !== 'allow-unsigned'))
      .map(([k, v]) => `${quoteKey(k)} = ${v}`);
    return text((base ? 'dir = "repo"\nallow-unsigned = true\n' : '') + [...lines, ...tables].join('\n') + '\n');
  });

export const agentConfig: FuzzTarget = {
  name: 'agent-config',
  parses:
    "parseAgentConfig, parseAgentOptions --config (src/cli/agent-config.ts, agent-options.ts): the agent's configuration file",
  maxBytes: 4 * 1024,
  testRuns: 1_000,
  dictionary: [
    'dir = ',
    'repo = ',
    'trusted-key = [',
    'label = [',
    'allow-unsigned = true',
    'settle = ',
    'concurrency = ',
    '[',
    ']',
    '"',
  ],
  structured,
  async setup() {
    setup();
  },
  async teardown() {
    rmSync(dir, { recursive: true, force: true });
    dir = '';
  },
  check(input) {
    if (!dir) setup(); // a replay without setup
    const result = parseAgentConfig(file, input);
    holdsFor(input, result);
    // The same file from the disk, as `keystone agent --config` reads it: values, or AgentConfigError / a usage error.
    writeFileSync(file, input, { mode: 0o600 });
    const io = { stdout: { write: () => true }, stderr: { write: () => true }, cwd: dir, env: {} };
    try {
      const { values } = parseAgentOptions(['--config', file], io as never);
      holds(typeof values['state-dir'] === 'string', 'no state directory');
    } catch (e) {
      refusedWith(e, (x) => (x instanceof AgentConfigError && x.diagnostics.length > 0) || x instanceof UsageError);
    }
    return result.diagnostics.length ? 'refused' : 'accepted';
  },
};
