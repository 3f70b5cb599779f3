// The rule of a component's name, apart from the schemas (schema-rules.ts) so that what checks a name on the command
// line (keystonectl restart NAME) does not load the schema library: `keystonectl status` starts in a fraction of the time.

const COMPONENT_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/i;

/** Letters, digits, ".", "_" and "-", starting with a letter or digit, at most 63 characters, no "..". */
export const isComponentName = (v: string): boolean => COMPONENT_NAME.test(v) && !v.includes('..');
