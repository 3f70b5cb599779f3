// Fuzzing the agent's configuration loader, which reads a file an operator (or a provisioning script) wrote: whatever
// the bytes, it returns diagnostics with a KS_ code, the file, a TOML path and a line inside the file, or values of the
// types the agent's flags have; it never throws. Arbitrary bytes, generated TOML over the real keys and their near
// misses, and mutations of a valid file (so that the inputs reach past the TOML parser).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentConfigError, type ConfigDiagnostic } from '../../src/cli/agent-config-error.js';
import { parseAgentConfig, type AgentConfig } from '../../src/cli/agent-config.js';
import { AGENT_OPTIONS, parseAgentOptions } from '../../src/cli/agent-options.js';
import { UsageError } from '../../src/cli/io.js';
import { runCtl } from '../support/cli-run.js';

const RUNS = 2_000;
let dir: string;
let file: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'keystone-config-fuzz-'));
  file = join(dir, 'agent.toml');
  const r = await runCtl(['keygen', '--out', join(dir, 'release'), '--no-password'], dir);
  expect(r.code, r.stderr).toBe(0);
  writeFileSync(join(dir, 'token'), 'a-token\n');
  mkdirSync(join(dir, 'repo'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const OPTIONS = AGENT_OPTIONS as Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>;

/** The loader's contract, whatever it was given. */
function holds(text: string | Uint8Array, result: AgentConfig): void {
  const lines = (typeof text === 'string' ? text : Buffer.from(text).toString('latin1')).split('\n').length;
  for (const d of result.diagnostics as ConfigDiagnostic[]) {
    expect(d.code).toMatch(/^KS_[A-Z0-9_]+$/);
    expect(d.file).toBe(file);
    expect(typeof d.path).toBe('string');
    expect(d.message.length).toBeGreaterThan(0);
    if (d.line !== undefined) {
      expect(Number.isInteger(d.line)).toBe(true);
      expect(d.line).toBeGreaterThanOrEqual(1);
      expect(d.line).toBeLessThanOrEqual(lines);
    }
  }
  if (result.diagnostics.length) return;
  // A valid file: only the agent's keys, each of its flag's type.
  for (const [key, value] of Object.entries(result.values)) {
    const option = OPTIONS[key];
    expect(option, key).toBeDefined();
    if (option!.type === 'boolean') expect(typeof value).toBe('boolean');
    else if (option!.multiple) expect(Array.isArray(value) && value.every((v) => typeof v === 'string')).toBe(true);
    else expect(typeof value).toBe('string');
  }
  expect(Object.hasOwn(result.values, 'repo') !== Object.hasOwn(result.values, 'dir')).toBe(true);
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

/** TOML value texts: valid ones of every type, the agent's own shapes, and some that are not TOML at all. */
const valueText: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 12 }).map(str),
  fc.string({ unit: 'binary', maxLength: 8 }).map(str),
  fc.integer({ min: -3, max: 20 }).map(String),
  fc.constantFrom(
    'true',
    'false',
    '2.5',
    'inf',
    'nan',
    '1979-05-27',
    '1979-05-27T07:32:00Z',
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
      '720h',
      '0',
      'none',
      'rollback',
      'json',
      'pretty',
      'git-notes,github',
      '127.0.0.1:8080',
      '0.0.0.0:1',
      'CAP_NET_ADMIN',
      '/dev/ttyUSB0',
      '/srv/data',
      'srv',
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
      'git@h:x',
      'ghp_0123456789abcdefghij',
    )
    .map(str),
  fc
    .array(fc.constantFrom('role=gateway', 'site=lab', 'role=x', 'bad', 'release.pub', '/srv', 'CAP_CHOWN', ''), {
      maxLength: 3,
    })
    .map((xs) => `[${xs.map(str).join(', ')}]`),
);

/** Lines of `key = value` (each key once, as TOML wants), table headers and noise, after a valid start or none. */
const BASE = 'dir = "repo"\nallow-unsigned = true\n';
const document: fc.Arbitrary<string> = fc
  .tuple(
    fc.boolean(),
    fc.uniqueArray(fc.tuple(fc.constantFrom(...KEYS), valueText), { selector: ([k]) => k, maxLength: 6 }),
    fc.array(
      fc.oneof(
        fc.constantFrom(...KEYS).map((k) => `[${quoteKey(k)}]`),
        fc.constantFrom('# a comment', '', '   '),
      ),
      { maxLength: 2 },
    ),
  )
  .map(([base, pairs, extra]) => {
    const lines = pairs
      .filter(([k]) => !base || (k !== 'dir' && k !== 'allow-unsigned'))
      .map(([k, v]) => `${quoteKey(k)} = ${v}`);
    return (base ? BASE : '') + [...lines, ...extra].join('\n') + '\n';
  });

/** A valid file with a few characters changed, dropped or added. */
const VALID =
  'dir = "repo"\ntrusted-key = ["release.pub"]\nlabel = ["role=gateway", "site=lab"]\nsettle = "100ms"\nconcurrency = 2\nstop-on-exit = true\n';
const mutated = fc
  .tuple(
    fc.array(
      fc.tuple(fc.nat(), fc.constantFrom('"', '=', '[', ']', '\n', '#', ' ', 'x', '.', ',', '\\', '\u0000', '')),
      { maxLength: 4 },
    ),
    fc.nat(),
  )
  .map(([edits, cut]) => {
    let s = VALID;
    for (const [i, c] of edits) {
      const at = i % (s.length + 1);
      s = s.slice(0, at) + c + s.slice(at + (c === '' ? 1 : 0));
    }
    return s.slice(0, s.length - (cut % 5));
  });

describe('fuzz: the agent configuration loader', () => {
  it('arbitrary bytes: coded diagnostics or valid values, never an exception', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => holds(bytes, parseAgentConfig(file, bytes))),
      { numRuns: RUNS },
    );
  });

  // Each generator must reach past the parser: some of its inputs are valid, some fail the rules, not only TOML.
  const reach = () => ({ valid: 0, ruled: 0 });
  const count = (r: ReturnType<typeof reach>, result: AgentConfig) => {
    if (!result.diagnostics.length) r.valid++;
    else if (result.diagnostics.some((d) => d.code !== 'KS_TOML_SYNTAX')) r.ruled++;
  };

  it('generated TOML over the real keys, their near misses and hostile names', () => {
    const r = reach();
    fc.assert(
      fc.property(document, (text) => {
        const result = parseAgentConfig(file, text);
        holds(text, result);
        count(r, result);
      }),
      { numRuns: RUNS },
    );
    expect(r.valid).toBeGreaterThan(0);
    expect(r.ruled).toBeGreaterThan(RUNS / 10);
  });

  it('mutations of a valid file', () => {
    expect(parseAgentConfig(file, VALID).diagnostics).toEqual([]);
    const r = reach();
    fc.assert(
      fc.property(mutated, (text) => {
        const result = parseAgentConfig(file, text);
        holds(text, result);
        count(r, result);
      }),
      { numRuns: RUNS },
    );
    expect(r.valid).toBeGreaterThan(0);
    expect(r.ruled).toBeGreaterThan(RUNS / 100);
  });

  it('parseAgentOptions on such a file, from the disk: values, or AgentConfigError / a usage error only', () => {
    const io = { stdout: { write: () => true }, stderr: { write: () => true }, cwd: dir, env: {} };
    fc.assert(
      fc.property(fc.oneof(document, mutated), (text) => {
        writeFileSync(file, text);
        try {
          const { values } = parseAgentOptions(['--config', file], io);
          expect(typeof values['state-dir']).toBe('string');
        } catch (e) {
          if (!(e instanceof AgentConfigError) && !(e instanceof UsageError)) throw e;
          if (e instanceof AgentConfigError) expect(e.diagnostics.length).toBeGreaterThan(0);
        }
      }),
      { numRuns: 300 },
    );
  });
});
