// A recipe's raw TOML tables before the schema types them: the one guard the cross-field rules (recipe.ts and the rule
// files beside it) share, apart so each rule file can read a table without importing recipe.ts.
export type RawTable = Record<string, unknown>;
export const table = (v: unknown): RawTable | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as RawTable) : undefined;
