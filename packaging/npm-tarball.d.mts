// Types of npm-tarball.mjs for the tests that call it.
export function buildCache(): string;
export function npmPackage(spec: { name: string; version: string; integrity: string }): string;
