// The types of the built agent the benches import (../dist/…: `npm run build` compiles src/ there, without
// declarations): each dist/ module the benches name has the types of its source in src/ (tsconfig.json maps
// keystone-src/* to src/*). The benches run dist/, so that they measure what is shipped; this file only types it.
// A bench that imports another dist/ module adds it here; a module moved in src/ moves here too. The list, regenerated:
//   grep -rhoE "(\.\./)+dist/[a-z0-9/_-]+\.js" bench --include=*.ts | sed -E 's#^(\.\./)+dist/##' | sort -u
declare module '*/dist/agent/report-admission.js' {
  export * from 'keystone-src/agent/report-admission.js';
}
declare module '*/dist/agent/rollout-gate.js' {
  export * from 'keystone-src/agent/rollout-gate.js';
}
declare module '*/dist/api/api-metrics.js' {
  export * from 'keystone-src/api/api-metrics.js';
}
declare module '*/dist/api/api-token.js' {
  export * from 'keystone-src/api/api-token.js';
}
declare module '*/dist/api/dashboard-sessions.js' {
  export * from 'keystone-src/api/dashboard-sessions.js';
}
declare module '*/dist/cli/keystonectl.js' {
  export * from 'keystone-src/cli/keystonectl.js';
}
declare module '*/dist/core/desired-state-types.js' {
  export * from 'keystone-src/core/desired-state-types.js';
}
declare module '*/dist/core/desired-state.js' {
  export * from 'keystone-src/core/desired-state.js';
}
declare module '*/dist/core/diff.js' {
  export * from 'keystone-src/core/diff.js';
}
declare module '*/dist/core/duration.js' {
  export * from 'keystone-src/core/duration.js';
}
declare module '*/dist/core/plan.js' {
  export * from 'keystone-src/core/plan.js';
}
declare module '*/dist/core/recipe.js' {
  export * from 'keystone-src/core/recipe.js';
}
declare module '*/dist/core/rollout-gate.js' {
  export * from 'keystone-src/core/rollout-gate.js';
}
declare module '*/dist/core/rollout.js' {
  export * from 'keystone-src/core/rollout.js';
}
declare module '*/dist/core/schedule.js' {
  export * from 'keystone-src/core/schedule.js';
}
declare module '*/dist/core/valid.js' {
  export * from 'keystone-src/core/valid.js';
}
declare module '*/dist/dev/git-http-server.js' {
  export * from 'keystone-src/dev/git-http-server.js';
}
declare module '*/dist/identity/age-identity-file.js' {
  export * from 'keystone-src/identity/age-identity-file.js';
}
declare module '*/dist/identity/certificate.js' {
  export * from 'keystone-src/identity/certificate.js';
}
declare module '*/dist/identity/report-signature.js' {
  export * from 'keystone-src/identity/report-signature.js';
}
declare module '*/dist/identity/sign-certificate.js' {
  export * from 'keystone-src/identity/sign-certificate.js';
}
declare module '*/dist/runtime/container-runtime.js' {
  export * from 'keystone-src/runtime/container-runtime.js';
}
declare module '*/dist/runtime/container-spec.js' {
  export * from 'keystone-src/runtime/container-spec.js';
}
declare module '*/dist/secrets/age-codec.js' {
  export * from 'keystone-src/secrets/age-codec.js';
}
declare module '*/dist/secrets/open-secrets.js' {
  export * from 'keystone-src/secrets/open-secrets.js';
}
declare module '*/dist/secrets/secret-digest.js' {
  export * from 'keystone-src/secrets/secret-digest.js';
}
declare module '*/dist/core/secret-paths.js' {
  export * from 'keystone-src/core/secret-paths.js';
}
declare module '*/dist/source/directory-reader.js' {
  export * from 'keystone-src/source/directory-reader.js';
}
declare module '*/dist/git/git-ls-refs.js' {
  export * from 'keystone-src/git/git-ls-refs.js';
}
declare module '*/dist/source/git-source.js' {
  export * from 'keystone-src/source/git-source.js';
}
declare module '*/dist/source/git-tree-reader.js' {
  export * from 'keystone-src/source/git-tree-reader.js';
}
declare module '*/dist/load/load-revision.js' {
  export * from 'keystone-src/load/load-revision.js';
}
declare module '*/dist/source/memory-reader.js' {
  export * from 'keystone-src/source/memory-reader.js';
}
declare module '*/dist/source/ref-lister.js' {
  export * from 'keystone-src/source/ref-lister.js';
}
declare module '*/dist/source/repo-reader.js' {
  export * from 'keystone-src/source/repo-reader.js';
}
declare module '*/dist/report/git-notes-reporter.js' {
  export * from 'keystone-src/report/git-notes-reporter.js';
}
declare module '*/dist/report/rollout-refs.js' {
  export * from 'keystone-src/report/rollout-refs.js';
}
declare module '*/dist/trust/minisign.js' {
  export * from 'keystone-src/trust/minisign.js';
}
