// Secret values into a component's environment (secret-env.ts): pure, no process.
import { describe, expect, it } from 'vitest';
import type { DesiredComponent } from '../../src/core/desired-state.js';
import { isRuntimeError } from '../../src/runtime/runtime-error.js';
import { fillSecretEnv, scrubSecrets, secretTextsOf, withoutSecretEnv } from '../../src/runtime/secret-env.js';
import type { SecretValues } from '../../src/secrets/secret-vault.js';
import { processComponent } from './runtime-fixtures.js';

const enc = (s: string) => new TextEncoder().encode(s);

/** A component that reads `digests` (name → digest), and the values held by digest. */
function setup(
  digests: Record<string, string>,
  held: Record<string, Uint8Array>,
): { c: DesiredComponent; values: SecretValues } {
  const c = {
    ...processComponent('api', { command: 'true' }),
    secrets: Object.keys(digests).sort(),
    secretDigests: digests,
  };
  const map = new Map(Object.entries(held));
  return { c, values: { valueOf: (d) => map.get(d) } };
}

function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a throw');
}

describe('fillSecretEnv', () => {
  it('replaces each {{secret.NAME}} by its value, leaves other text and other braces as written', () => {
    const { c, values } = setup({ db: 'd1', api_key: 'd2' }, { d1: enc('hunter2-db'), d2: enc('k€y {{secret.db}}') });
    const env = {
      PATH: '/bin',
      DB_PASSWORD: '{{secret.db}}',
      DB_URL: 'postgres://app:{{ secret.db }}@db/app?again={{secret.db}}',
      KEY: '{{secret.api_key}}',
      JSON: '{"a":{{1}}}',
    };
    const out = fillSecretEnv(c, env, values);
    expect(out).toEqual({
      PATH: '/bin',
      DB_PASSWORD: 'hunter2-db',
      DB_URL: 'postgres://app:hunter2-db@db/app?again=hunter2-db',
      // One pass: a value that reads like a placeholder is the value.
      KEY: 'k€y {{secret.db}}',
      JSON: '{"a":{{1}}}',
    });
    expect(env.DB_PASSWORD).toBe('{{secret.db}}'); // the given record is not changed
  });

  it('gives the same record back when no variable reads a secret, without asking for values', () => {
    const { c } = setup({}, {});
    const env = { PATH: '/bin', A: '{{not.a.secret}}' };
    expect(fillSecretEnv(c, env, undefined)).toBe(env);
  });

  it('keeps the bytes as they are: a leading BOM and a trailing newline stay', () => {
    const { c, values } = setup({ s: 'd' }, { d: new Uint8Array([0xef, 0xbb, 0xbf, 0x61, 0x0a]) });
    expect(fillSecretEnv(c, { S: '{{secret.s}}' }, values).S).toBe('\ufeffa\n');
  });

  it('KS_SECRET_UNAVAILABLE, naming the component and the secret, when the digest or the value is missing', () => {
    const noDigest = setup({}, {});
    const e1 = thrown(() => fillSecretEnv(noDigest.c, { P: '{{secret.db}}' }, noDigest.values));
    expect(isRuntimeError(e1, 'KS_SECRET_UNAVAILABLE')).toBe(true);
    expect(e1.message).toContain('api');
    expect(e1.message).toContain('secret db');
    expect((e1 as { data?: unknown }).data).toEqual({ component: 'api', secret: 'db' });

    const dropped = setup({ db: 'gone' }, { other: enc('hunter2-other') });
    const e2 = thrown(() => fillSecretEnv(dropped.c, { P: '{{secret.db}}' }, dropped.values));
    expect(isRuntimeError(e2, 'KS_SECRET_UNAVAILABLE')).toBe(true);
    expect(e2.message).toMatch(/no longer holds/);

    const e3 = thrown(() => fillSecretEnv(dropped.c, { P: '{{secret.db}}' }, undefined));
    expect(isRuntimeError(e3, 'KS_SECRET_UNAVAILABLE')).toBe(true);
  });

  it('KS_SECRET_NOT_TEXT for a value with a NUL byte or that is not UTF-8; the message never quotes the value', () => {
    const nul = setup({ s: 'd' }, { d: enc('hunter2\0tail') });
    const e1 = thrown(() => fillSecretEnv(nul.c, { S: '{{secret.s}}' }, nul.values));
    expect(isRuntimeError(e1, 'KS_SECRET_NOT_TEXT')).toBe(true);
    expect(e1.message).toContain('secret s');
    expect(e1.message).not.toContain('hunter2');

    const latin1 = setup({ s: 'd' }, { d: new Uint8Array([0x68, 0x75, 0x6e, 0xe9, 0x72]) });
    const e2 = thrown(() => fillSecretEnv(latin1.c, { S: '{{secret.s}}' }, latin1.values));
    expect(isRuntimeError(e2, 'KS_SECRET_NOT_TEXT')).toBe(true);

    // A NUL the recipe writes next to the placeholder would fail the spawn, whose error quotes the whole value.
    const around = setup({ s: 'd' }, { d: enc('hunter2-value') });
    const e3 = thrown(() => fillSecretEnv(around.c, { S: '{{secret.s}}\0' }, around.values));
    expect(isRuntimeError(e3, 'KS_SECRET_NOT_TEXT')).toBe(true);
    expect(e3.message).not.toContain('hunter2');
  });
});

describe('scrubbing what is said about a component', () => {
  it('secretTextsOf gives the values it reads (and each of their lines) of 4 characters or more, longest first', () => {
    const { c, values } = setup(
      { a: 'da', b: 'db', c: 'dc' },
      { da: enc('abc'), db: enc('line-one\nline-two'), dc: enc('hunter2') },
    );
    expect(secretTextsOf(c, values)).toEqual(['line-one\nline-two', 'line-one', 'line-two', 'hunter2']);
  });

  it('scrubSecrets replaces each value, a longer one whole', () => {
    expect(scrubSecrets('exit 1: hunter2 and hunter2-long', ['hunter2-long', 'hunter2'])).toBe(
      'exit 1: [secret] and [secret]',
    );
  });
});

describe('withoutSecretEnv (the environment of a container’s host-side check)', () => {
  it('leaves out every variable that reads a secret, however spaced; keeps the others; the same object when none does', () => {
    const env = {
      PATH: '/bin',
      A: '{{secret.db}}',
      B: 'x:{{ secret.db }}@h',
      C: '{{config.port}}',
      D: 'secret.db',
      E: '{{secret.}}',
    };
    expect(withoutSecretEnv(env)).toEqual({ PATH: '/bin', C: '{{config.port}}', D: 'secret.db', E: '{{secret.}}' });
    // Twice in a row (no state carried from one test to the next).
    expect(withoutSecretEnv({ A: '{{secret.a}}', B: '{{secret.b}}' })).toEqual({});
    const plain = { PATH: '/bin' };
    expect(withoutSecretEnv(plain)).toBe(plain);
  });
});
