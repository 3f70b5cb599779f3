// Types of sqlite-addon-build.mjs for the tests and benchmarks that call it.
export const LEFT_OUT: string[];
export const ADDED: string[];
export const SQLITE_CFLAGS: string;
export function leanDefines(gypi: string): string;
export function checkLean(addon: string): void;
export function sqliteAddon(
  arch: string,
  abi: string,
  runtime: { abis: Record<string, { node: string; headers: { name: string; version: string; integrity: string } }> },
  log?: (line: string) => void,
): string;
