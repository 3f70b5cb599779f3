// Types of deb-arch.mjs for the tests that call it.
export type DebArch = 'amd64' | 'arm64' | 'armhf';
export const ARCHES: Record<
  DebArch,
  { node: string; gyp: string; elfClass: 1 | 2; machine: number; hardFloat?: boolean; triplet: string }
>;
export function archInfo(arch: string): (typeof ARCHES)[DebArch];
export function hostArch(): DebArch;
