// A Git commit id as the agent follows it: only commits have statuses, rollout refs and ancestry (a directory revision
// `dir:…` or a manual apply `manual:…` has nowhere to report to).

/** 40 lowercase hex digits (SHA-1), the whole string: for a schema's regex; isCommitId otherwise. */
export const COMMIT_ID = /^[0-9a-f]{40}$/;

export const isCommitId = (id: string): boolean => COMMIT_ID.test(id);
