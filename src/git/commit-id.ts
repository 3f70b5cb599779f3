// A Git commit id as the agent follows it: only commits have statuses, rollout refs and ancestry (a directory revision
// `dir:…` or a manual apply `manual:…` has nowhere to report to).

export const isCommitId = (id: string): boolean => /^[0-9a-f]{40}$/.test(id);
