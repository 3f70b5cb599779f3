// Types of bundle.mjs for the tests that call it.
export function hostAddonName(): Promise<string>;
export function bundle(opts: {
  out: string;
  version?: string;
  addon?: string;
}): Promise<{ files: string[]; packages: { name: string; version: string; license: string; dir: string }[] }>;
