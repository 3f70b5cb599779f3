// <state-dir>/api-token: made once (0600, 32 random bytes in hex), never rewritten, refused when it is not a plain
// file with a long enough token.
import {
  chmodSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureApiToken } from '../../src/api/api-token.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), 'keystone-token-'));
  dirs.push(d);
  return d;
};

describe('ensureApiToken', () => {
  it('creates a 0600 file of 64 hex digits once, then reads it back unchanged', () => {
    const dir = temp();
    const first = ensureApiToken(dir);
    expect(first.created).toBe(true);
    expect(first.token).toMatch(/^[0-9a-f]{64}$/);
    expect(statSync(first.path).mode & 0o777).toBe(0o600);
    const second = ensureApiToken(dir);
    expect(second).toEqual({ token: first.token, path: first.path, created: false });
    expect(readFileSync(first.path, 'utf8')).toBe(`${first.token}\n`);
    // No temporary file is left beside it.
    expect(readdirSync(dir)).toEqual(['api-token']);
  });

  it("keeps an operator's own token, and flags a file its group or every user can read", () => {
    const dir = temp();
    const mine = 'my-own-token-that-is-long-enough-0123456789';
    writeFileSync(join(dir, 'api-token'), `${mine}\n`, { mode: 0o644 });
    chmodSync(join(dir, 'api-token'), 0o644);
    expect(ensureApiToken(dir)).toMatchObject({ token: mine, created: false, readableByOthers: true });
    chmodSync(join(dir, 'api-token'), 0o640);
    expect(ensureApiToken(dir)).toMatchObject({ token: mine, created: false, readableByOthers: true });
    chmodSync(join(dir, 'api-token'), 0o600);
    expect(ensureApiToken(dir)).toEqual({ token: mine, path: join(dir, 'api-token'), created: false });
  });

  it('refuses a short token, an empty file and a symbolic link', () => {
    const dir = temp();
    writeFileSync(join(dir, 'api-token'), 'short\n');
    expect(() => ensureApiToken(dir)).toThrow(/at least 32 characters/);
    writeFileSync(join(dir, 'api-token'), '');
    expect(() => ensureApiToken(dir)).toThrow(/at least 32 characters/);
    rmSync(join(dir, 'api-token'));
    writeFileSync(join(dir, 'elsewhere'), 'x'.repeat(64));
    symlinkSync(join(dir, 'elsewhere'), join(dir, 'api-token'));
    expect(() => ensureApiToken(dir)).toThrow(/symbolic link/);
  });
});
