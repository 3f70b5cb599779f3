// Secret values go into a component's environment here, where it starts (SPEC §16), and nowhere before: the desired
// state, the store and every report keep `{{secret.NAME}}` as written. Errors name the component and the secret, never
// a value.
import type { DesiredComponent } from '../core/desired-state.js';
import type { SecretValues } from '../secrets/secret-vault.js';
import { RuntimeError } from './runtime-error.js';

/** `{{secret.NAME}}` as the core keeps it (template.ts: secretPlaceholder), spaces inside the braces tolerated. */
const SECRET_PLACEHOLDER = /\{\{\s*secret\.([A-Za-z0-9][A-Za-z0-9_-]{0,62})\s*\}\}/g;
/** The same, for a test (not global: no lastIndex carried from one text to the next). */
const READS_SECRET = new RegExp(SECRET_PLACEHOLDER.source);

/** Shorter values are not scrubbed from text (they would match inside ordinary words); as the vault does. */
const MIN_SCRUB = 4;

/**
 * The value of secret `name` as `c` reads it: by the digest the agent recorded for it (`secretDigests`), from `values`.
 * Throws KS_SECRET_UNAVAILABLE when the digest is missing, there is no vault, or the vault no longer holds the value.
 */
export function secretValue(c: DesiredComponent, name: string, values: SecretValues | undefined): Uint8Array {
  const digest = c.secretDigests?.[name];
  const why =
    digest === undefined
      ? 'the agent has not opened it for this component'
      : values === undefined
        ? 'this runtime was given no secret values'
        : undefined;
  const value = digest !== undefined ? values?.valueOf(digest) : undefined;
  if (value) return value;
  throw new RuntimeError(
    'KS_SECRET_UNAVAILABLE',
    `${c.name} reads secret ${name}, which is not available: ${why ?? 'the agent no longer holds its value (it opens secrets when it applies a revision)'}`,
    { component: c.name, secret: name },
  );
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A value as an environment variable's text: UTF-8 without a NUL byte (execve cannot pass one), else KS_SECRET_NOT_TEXT. */
export function secretText(c: DesiredComponent, name: string, value: Uint8Array): string {
  if (value.includes(0))
    throw new RuntimeError(
      'KS_SECRET_NOT_TEXT',
      `secret ${name} of ${c.name} holds a NUL byte and cannot be an environment variable's value: give it as a file ([[lifecycle.run.secrets]])`,
      {
        component: c.name,
        secret: name,
      },
    );
  try {
    return strictUtf8.decode(value);
  } catch {
    throw new RuntimeError(
      'KS_SECRET_NOT_TEXT',
      `secret ${name} of ${c.name} is not UTF-8 text and cannot be an environment variable's value: give it as a file ([[lifecycle.run.secrets]])`,
      {
        component: c.name,
        secret: name,
      },
    );
  }
}

/**
 * `env` with each `{{secret.NAME}}` replaced by the value (one pass: a value that itself reads `{{secret.X}}` stays as
 * it is). The same object when no variable reads a secret, so components without secrets need no vault. Throws
 * KS_SECRET_UNAVAILABLE or KS_SECRET_NOT_TEXT, before any variable is returned.
 */
export function fillSecretEnv(
  c: DesiredComponent,
  env: Record<string, string>,
  values: SecretValues | undefined,
): Record<string, string> {
  let out: Record<string, string> | undefined;
  const texts = new Map<string, string>();
  for (const [key, text] of Object.entries(env)) {
    if (!text.includes('{{')) continue;
    const filled = text.replace(SECRET_PLACEHOLDER, (_m, name: string) => {
      let t = texts.get(name);
      if (t === undefined) texts.set(name, (t = secretText(c, name, secretValue(c, name, values))));
      return t;
    });
    if (filled === text) continue;
    // A NUL written around the placeholder fails the spawn, whose error quotes the whole value: refused first.
    if (filled.includes('\0'))
      throw new RuntimeError(
        'KS_SECRET_NOT_TEXT',
        `${c.name}: environment variable ${key}, which reads a secret, holds a NUL byte`,
        { component: c.name },
      );
    (out ??= { ...env })[key] = filled;
  }
  return out ?? env;
}

/**
 * `env` without the variables that read a secret: for a process that must not hold any value (a container's `cmd:`
 * health check, which runs on the host as a user other processes share). The same object when none does.
 */
export function withoutSecretEnv(env: Record<string, string>): Record<string, string> {
  const reads = (text: string) => text.includes('{{') && READS_SECRET.test(text);
  if (!Object.values(env).some(reads)) return env;
  return Object.fromEntries(Object.entries(env).filter(([, text]) => !reads(text)));
}

/** The values `c` reads that `values` holds, as text to scrub from what is said about it (MIN_SCRUB or more characters). */
export function secretTextsOf(c: DesiredComponent, values: SecretValues | undefined): string[] {
  if (!values || !c.secretDigests) return [];
  const decoder = new TextDecoder();
  const out = new Set<string>();
  for (const digest of Object.values(c.secretDigests)) {
    const v = values.valueOf(digest);
    if (!v) continue;
    const text = decoder.decode(v);
    // Each line too: output and messages quote a line at a time.
    for (const t of [text, ...text.split(/\r?\n/)]) if (t.trim().length >= MIN_SCRUB) out.add(t);
  }
  return [...out].sort((a, b) => b.length - a.length);
}

/** `text` with every one of `secrets` replaced by `[secret]` (longest first: a value containing another goes whole). */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.split(s).join('[secret]');
  return out;
}
