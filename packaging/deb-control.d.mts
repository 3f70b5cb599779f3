// Types of deb-control.mjs for the tests that call it.
export function filesUnder(root: string, dir?: string): string[];
export function installedSizeKiB(root: string): number;
export function md5sums(root: string, conffiles?: string[]): string;
export function sharedLibraryDepends(binaries: string[], warn: (line: string) => void): string;
export function foreignLibraryDepends(binaries: string[]): string;
export function renderControl(template: string, fields: Record<string, string | number>): string;
export function normalizeModes(root: string): void;
