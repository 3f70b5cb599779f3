// SHA256SUMS as `sha256sum` writes it: strict parsing (anything odd refuses the whole file) and stable formatting.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatSha256Sums, isSignedDocument, parseSha256Sums, sha256Hex } from '../../src/trust/sha256sums.js';
import { TrustError } from '../../src/trust/trust-error.js';

const A = 'a'.repeat(64);
const B = '0123456789abcdef'.repeat(4);
const C = sha256Hex(new TextEncoder().encode('hello\n'));

/** Runs `fn` and returns the TrustError it threw (failing the test when it threw nothing or something else). */
function trustErrorOf(fn: () => unknown): TrustError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(TrustError);
    return e as TrustError;
  }
  throw new Error('expected a TrustError, nothing was thrown');
}

describe('sha256Hex', () => {
  it('is the sha256 of the bytes, in lower-case hex', () => {
    expect(C).toBe('5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03');
    expect(sha256Hex(new Uint8Array())).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });
});

describe('parseSha256Sums / formatSha256Sums', () => {
  it('formats sorted by path, two spaces between digest and path, one line each', () => {
    const text = formatSha256Sums(
      new Map([
        ['recipes/b.toml', B],
        ['plans/edge.toml', A],
        ['recipes/a.toml', C],
      ]),
    );
    expect(text).toBe(`${A}  plans/edge.toml\n${C}  recipes/a.toml\n${B}  recipes/b.toml\n`);
  });

  it('round trips: format(parse(text)) is text for a sorted file, and parse(format(m)) is m', () => {
    const text = `${A}  plans/edge.toml\n${C}  recipes/a.toml\n${B}  recipes/with space.toml\n`;
    const parsed = parseSha256Sums(text);
    expect([...parsed]).toEqual([
      ['plans/edge.toml', A],
      ['recipes/a.toml', C],
      ['recipes/with space.toml', B],
    ]);
    expect(formatSha256Sums(parsed)).toBe(text);
  });

  it('round trips any set of paths (property)', () => {
    const path = fc.string({ minLength: 1, maxLength: 40 }).filter((p) => !p.includes('\n') && !p.startsWith('./'));
    const digest = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('hex'));
    fc.assert(
      fc.property(fc.dictionary(path, digest, { maxKeys: 20 }), (dict) => {
        const m = new Map(Object.entries(dict));
        const text = formatSha256Sums(m);
        expect(new Map(parseSha256Sums(text))).toEqual(m);
        // Formatting is canonical: the same set always gives the same bytes, whatever the insertion order.
        expect(formatSha256Sums(new Map([...m].reverse()))).toBe(text);
      }),
    );
  });

  it('accepts a file without a final newline, and an empty file as the empty set', () => {
    expect([...parseSha256Sums(`${A}  plans/edge.toml`)]).toEqual([['plans/edge.toml', A]]);
    expect(parseSha256Sums('').size).toBe(0);
  });

  it('drops a leading ./ so that `sha256sum ./recipes/x.toml` lists recipes/x.toml', () => {
    const m = parseSha256Sums(`${A}  ./plans/edge.toml\n${B}  recipes/a.toml\n`);
    expect([...m.keys()]).toEqual(['plans/edge.toml', 'recipes/a.toml']);
    expect(formatSha256Sums(m)).toBe(`${A}  plans/edge.toml\n${B}  recipes/a.toml\n`);
  });

  it('reads binary-mode lines (`<hex> *<path>`), with or without ./', () => {
    const m = parseSha256Sums(`${A} *plans/edge.toml\n${B} *./recipes/a.toml\n${C}  recipes/b.toml\n`);
    expect([...m]).toEqual([
      ['plans/edge.toml', A],
      ['recipes/a.toml', B],
      ['recipes/b.toml', C],
    ]);
  });

  it('reads what GNU sha256sum writes, in text and binary mode, with and without ./', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keystone-sums-'));
    try {
      mkdirSync(join(dir, 'recipes'));
      mkdirSync(join(dir, 'plans'));
      const files = {
        'recipes/a.toml': 'name = "a"\n',
        'recipes/b c.toml': 'name = "b"\n',
        'plans/edge.toml': '[[components]]\n',
      };
      for (const [p, text] of Object.entries(files)) writeFileSync(join(dir, p), text);
      const expected = new Map(
        Object.entries(files).map(([p, text]) => [p, sha256Hex(new TextEncoder().encode(text))]),
      );
      const paths = Object.keys(files);
      for (const args of [paths, ['-b', ...paths], paths.map((p) => `./${p}`), ['-b', ...paths.map((p) => `./${p}`)]]) {
        const out = execFileSync('sha256sum', args, { cwd: dir, encoding: 'utf8' });
        expect(parseSha256Sums(out)).toEqual(expected);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ['a short digest', `${'a'.repeat(63)}  recipes/a.toml`],
    ['a long digest', `${'a'.repeat(65)}  recipes/a.toml`],
    ['an upper-case digest', `${'A'.repeat(64)}  recipes/a.toml`],
    ['a non-hex digest', `${'g'.repeat(64)}  recipes/a.toml`],
    ['one space and no mode character', `${A} recipes/a.toml`],
    ['a tab separator', `${A}\trecipes/a.toml`],
    ['no path', `${A}  `],
    ['no separator at all', A],
    ['a BSD-style line', `SHA256 (recipes/a.toml) = ${A}`],
    ['a leading space', ` ${A}  recipes/a.toml`],
    ['an escaped (backslash) sha256sum line', `\\${A}  recipes/a\\nb.toml`],
    ['a comment', '# recipes'],
    ['a line of spaces', '   '],
  ])('refuses %s with KS_SUMS_MALFORMED, naming the file and line', (_what, bad) => {
    const text = `${B}  plans/edge.toml\n${bad}\n${C}  recipes/z.toml\n`;
    const err = trustErrorOf(() => parseSha256Sums(text, 'SHA256SUMS'));
    expect(err.code).toBe('KS_SUMS_MALFORMED');
    expect(err.file).toBe('SHA256SUMS');
    expect(err.message).toContain('SHA256SUMS:2:');
  });

  it('refuses a path listed twice, even with the same digest', () => {
    const err = trustErrorOf(() =>
      parseSha256Sums(`${A}  recipes/a.toml\n${B}  plans/edge.toml\n${A}  recipes/a.toml\n`, 'SHA256SUMS'),
    );
    expect(err.code).toBe('KS_SUMS_MALFORMED');
    expect(err.message).toContain('SHA256SUMS:3:');
    expect(err.message).toContain('recipes/a.toml');
  });

  it('refuses a path listed twice under two spellings (./x and x, or text and binary mode)', () => {
    for (const text of [
      `${A}  recipes/a.toml\n${B}  ./recipes/a.toml\n`,
      `${A} *recipes/a.toml\n${B}  recipes/a.toml\n`,
    ]) {
      const err = trustErrorOf(() => parseSha256Sums(text, 'SUMS'));
      expect(err.code).toBe('KS_SUMS_MALFORMED');
      expect(err.file).toBe('SUMS');
      expect(err.message).toContain('listed twice');
    }
  });
});

describe('isSignedDocument', () => {
  it('covers every .toml under recipes/ and plans/, nothing else', () => {
    for (const p of ['recipes/a.toml', 'plans/edge.toml', 'recipes/sub/dir/x.toml'])
      expect(isSignedDocument(p)).toBe(true);
    for (const p of [
      'README.md',
      'recipes/a.txt',
      'artifacts/x.toml',
      'SHA256SUMS',
      'x/recipes/a.toml',
      'recipes/.toml',
    ])
      expect(isSignedDocument(p)).toBe(false);
  });

  it('covers the files of secrets/ (SPEC §16) and the revocations, nothing else there', () => {
    for (const p of [
      'secrets/db.age',
      'secrets/keys/edge.age',
      'secrets/recipients/edge.txt',
      'secrets/operators.txt',
      'devices/revoked.toml',
      'fleet.toml',
    ])
      expect(isSignedDocument(p)).toBe(true);
    for (const p of [
      'secrets/db.txt',
      'secrets/keys/edge.txt',
      'secrets/recipients/edge.age',
      'secrets/sub/db.age',
      'secrets/.age',
      'devices/gw-1.cert',
    ])
      expect(isSignedDocument(p)).toBe(false);
  });
});
