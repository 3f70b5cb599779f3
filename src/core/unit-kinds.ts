// The kinds of a dependency and of a group, as words: a leaf that imports nothing, so that the API's views (and the
// dashboard's type-check, which has no node: types) can name them without the desired state's modules.

export type DependencyType = 'hard' | 'ordering';

export type GroupKind = 'services' | 'composite' | 'replicas';
