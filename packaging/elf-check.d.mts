// Types of elf-check.mjs for the tests that call it.
export function elfHeader(file: string): { elfClass: number; machine: number; flags: number } | undefined;
export function checkElfArch(root: string, arch: string): string[];
