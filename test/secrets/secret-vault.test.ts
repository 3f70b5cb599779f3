// The vault's scrub (src/secrets/secret-vault.ts) and the agent's logger with it (src/log/logger.ts): a secret value
// leaves no form of itself in text — as written, JSON-escaped (also escaped twice, as a JSON log line holds a value a
// component printed in JSON), URL-encoded, base64, a line of a value of several, a piece beside a cut or at the edge
// of text sliced to a length — and values of revisions long gone are dropped.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.js';
import { SecretVault } from '../../src/secrets/secret-vault.js';

const VALUE = 'Sup3r"Se\\cret-pässwörd/2026+long@value';
const enc = new TextEncoder();

function vaultWith(...values: string[]): SecretVault {
  const v = new SecretVault();
  v.keep(new Map(values.map((x, i) => [`d${i}`, enc.encode(x)])));
  return v;
}

/** Every form the tests look for: none may survive. */
function forms(v: string): string[] {
  const json = JSON.stringify(v).slice(1, -1);
  return [
    v,
    json,
    JSON.stringify(json).slice(1, -1),
    encodeURIComponent(v),
    Buffer.from(v).toString('base64').slice(0, 20),
    'Sup3r"Se\\cret-pä',
  ];
}

describe('SecretVault.scrub', () => {
  it('replaces the value in every form a program prints it in', () => {
    const v = vaultWith(VALUE);
    for (const text of [
      `auth failed for ${VALUE} at login`,
      `{"pw":${JSON.stringify(VALUE)}}`,
      `url=https://db/?p=${encodeURIComponent(VALUE)}`,
      `auth=${Buffer.from(`api:${VALUE}`).toString('base64')}`,
      // A reason sliced to its first characters: the start of the value at its very end.
      `probe said: ${'x'.repeat(30)} ${VALUE}`.slice(0, 50),
      // A line kept from its end, behind a cut marker.
      `… [cut: 126 bytes] ${VALUE.slice(12)} and more`,
    ]) {
      const out = v.scrub(text);
      for (const f of forms(VALUE)) expect(out, text).not.toContain(f);
      expect(out).toContain('[secret]');
    }
  });

  it('is the identity when nothing is held, and forgets values no kept revision uses', () => {
    const v = new SecretVault();
    expect(v.holdsAny).toBe(false);
    expect(v.scrub(`x ${VALUE}`)).toBe(`x ${VALUE}`);
    v.keep(new Map([['old', enc.encode(VALUE)]]));
    expect(v.scrub(`x ${VALUE}`)).toBe('x [secret]');
    for (let i = 0; i < 8; i++) v.keep(new Map([[`n${i}`, enc.encode(`another-value-${i}`)]]));
    expect(v.valueOf('old')).toBeUndefined();
    expect(v.scrub(`x ${VALUE}`)).toBe(`x ${VALUE}`);
  });
});

describe('the agent logger with a vault', () => {
  it('no form of a value in a JSON or a pretty line: message, fields, nested tables, errors', () => {
    for (const pretty of [false, true]) {
      const lines: string[] = [];
      const vault = vaultWith(VALUE);
      const log = createLogger({
        pretty,
        write: (l) => lines.push(l),
        scrub: (l) => vault.scrub(l),
        scrubbing: () => vault.holdsAny,
      });
      const child = log.child({ module: 'supervisor' });
      child.info({ component: 'api', reason: `check said ${JSON.stringify({ pw: VALUE })}` }, 'unhealthy');
      child.warn({ nested: { deep: [VALUE] } }, `message with ${VALUE}`);
      child.error({ err: new Error(`spawn failed: ${VALUE}`) }, 'failed');
      expect(lines).toHaveLength(3);
      for (const line of lines) for (const f of forms(VALUE)) expect(line, line).not.toContain(f);
      expect(lines.join('')).toContain('[secret]');
    }
  });

  // SPEC §16: "not in a log line (also not at debug level)". The agent has no flag for its level today; the scrub must
  // not depend on one, so this runs the logger at pino's most verbose level, set at creation and later on a child.
  it('scrubs at the most verbose levels too: every line at trace and debug (and above) is written, none with a value', () => {
    for (const pretty of [false, true]) {
      const lines: string[] = [];
      const vault = vaultWith(VALUE);
      const log = createLogger({
        pretty,
        level: 'trace',
        write: (l) => lines.push(l),
        scrub: (l) => vault.scrub(l),
        scrubbing: () => vault.holdsAny,
      });
      const child = log.child({ module: 'runtime' });
      const levels = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
      for (const level of levels)
        child[level](
          { component: 'api', env: { DB_PASSWORD: VALUE }, err: new Error(`exec with ${VALUE}`) },
          `${level}: argv sh -c ${JSON.stringify(VALUE)}`,
        );
      expect(lines, 'a line for every level, trace and debug included').toHaveLength(levels.length);
      for (const [i, level] of levels.entries()) {
        if (pretty) expect(lines[i]).toContain(`${level}:`);
        else
          expect(JSON.parse(lines[i]!)).toMatchObject({
            level: log.levels.values[level],
            msg: expect.stringContaining(`${level}:`),
          });
      }
      for (const line of lines) for (const f of forms(VALUE)) expect(line, line).not.toContain(f);
      for (const line of lines) expect(line).toContain('[secret]');

      // A level lowered after the logger was made (as a future --log-level or a SIGUSR toggle would): the same.
      const later = createLogger({
        pretty,
        write: (l) => lines.push(l),
        scrub: (l) => vault.scrub(l),
        scrubbing: () => vault.holdsAny,
      }).child({ module: 'agent' });
      later.debug(`hidden at info ${VALUE}`);
      expect(lines).toHaveLength(levels.length);
      later.level = 'trace';
      later.trace({ reason: VALUE }, `now shown ${VALUE}`);
      later.debug({ nested: { deep: [VALUE] } }, 'debug line');
      expect(lines).toHaveLength(levels.length + 2);
      for (const line of lines.slice(levels.length)) {
        for (const f of forms(VALUE)) expect(line, line).not.toContain(f);
        expect(line).toContain('[secret]');
      }
    }
  });
});
