// Device labels (SPEC §13): what a device says about itself (`--label hw=pi4`), matched by fleet.toml's selectors.
// Labels never come from the repository, so a selector can only pick among what the device declares. The syntax
// is Kubernetes' (a key with an optional `prefix/`, values of letters, digits, `.`, `_`, `-`), which operators know
// and which keeps a label printable in one report line.

export type Labels = Readonly<Record<string, string>>;

const KEY_NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;
const KEY_PREFIX = /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/;
const VALUE = /^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$/;

export const LABEL_KEY_HINT =
  'a key is letters, digits, ".", "_" and "-" (at most 63, starting and ending with a letter or digit), optionally after a "prefix/"';
export const LABEL_VALUE_HINT =
  'a value is empty, or letters, digits, ".", "_" and "-" (at most 63, starting and ending with a letter or digit)';

/** Why `key` is not a label key, or undefined when it is one. */
export function labelKeyProblem(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (KEY_NAME.test(name) && (prefix === undefined || KEY_PREFIX.test(prefix))) return undefined;
  return `${JSON.stringify(key)} is not a label key`;
}

/** Why `value` is not a label value, or undefined when it is one. */
export function labelValueProblem(value: string): string | undefined {
  return VALUE.test(value) ? undefined : `${JSON.stringify(value)} is not a label value`;
}

/** A device name (`--device`, a fleet file's `devices`): one printable word, as a report's context must be. */
export function deviceNameProblem(name: string): string | undefined {
  return /^[^\s\p{Cc}]{1,253}$/u.test(name)
    ? undefined
    : `${JSON.stringify(name)} is not a device name (one word of at most 253 characters, no spaces or control characters)`;
}

/** `KEY=VALUE` from the command line; throws with the reason when it is not one label. */
export function parseLabelArg(text: string): [string, string] {
  const eq = text.indexOf('=');
  if (eq < 0) throw new Error(`--label takes KEY=VALUE, not ${JSON.stringify(text)}`);
  const key = text.slice(0, eq);
  const value = text.slice(eq + 1);
  const problem = labelKeyProblem(key) ?? labelValueProblem(value);
  if (problem)
    throw new Error(`--label ${text}: ${problem} (${labelKeyProblem(key) ? LABEL_KEY_HINT : LABEL_VALUE_HINT})`);
  return [key, value];
}

/** Repeated `--label` flags as one set; a key given twice with two values is a mistake, not a choice. */
export function labelsFromArgs(args: readonly string[]): Labels {
  const out: Record<string, string> = {};
  for (const a of args) {
    const [k, v] = parseLabelArg(a);
    if (Object.hasOwn(out, k) && out[k] !== v)
      throw new Error(`--label ${k} is given twice, as ${JSON.stringify(out[k])} and ${JSON.stringify(v)}`);
    out[k] = v;
  }
  return out;
}

/** `hw=pi4, region=eu`, sorted by key: how labels are named in messages and reports. */
export function formatLabels(labels: Labels): string {
  const keys = Object.keys(labels).sort();
  return keys.length ? keys.map((k) => `${k}=${labels[k]}`).join(', ') : 'no labels';
}
