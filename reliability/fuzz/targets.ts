// Every fuzz target, in the order they run: one per parser of outside input (issue 18).
import type { FuzzTarget } from './fuzz-target.js';
import { githubWebhook } from './targets/github-webhook.js';
import { gitLsRefs } from './targets/git-ls-refs.js';
import { gitRefAdvertisement } from './targets/git-ref-advertisement.js';
import { agentConfig } from './targets/agent-config.js';
import { apiRequest } from './targets/api-request.js';
import { deviceCertificate } from './targets/device-certificate.js';
import { fleetLoad } from './targets/fleet-load.js';
import { fleetToml } from './targets/fleet-toml.js';
import { httpRetryAfter } from './targets/http-retry-after.js';
import { minisignPublicKey } from './targets/minisign-public-key.js';
import { minisignSecretKey } from './targets/minisign-secret-key.js';
import { minisignSignature } from './targets/minisign-signature.js';
import { planToml } from './targets/plan-toml.js';
import { recipeToml } from './targets/recipe-toml.js';
import { revisionLoad } from './targets/revision-load.js';
import { queryParams } from './targets/query-params.js';
import { receivePackAdvertisement } from './targets/receive-pack-advertisement.js';
import { receivePackReport } from './targets/receive-pack-report.js';
import { revocationsToml } from './targets/revocations-toml.js';
import { ageSecret } from './targets/age-secret.js';
import { rolloutRefs } from './targets/rollout-refs.js';
import { sha256sums } from './targets/sha256sums.js';
import { statusNotes } from './targets/status-notes.js';
import { tarUnpack } from './targets/tar-unpack.js';
import { thinPack } from './targets/thin-pack.js';
import { uploadPackResponse } from './targets/upload-pack-response.js';
import { zipUnpack } from './targets/zip-unpack.js';

export const TARGETS: readonly FuzzTarget[] = [
  recipeToml,
  planToml,
  fleetToml,
  revisionLoad,
  fleetLoad,
  sha256sums,
  minisignPublicKey,
  minisignSecretKey,
  minisignSignature,
  tarUnpack,
  zipUnpack,
  gitLsRefs,
  gitRefAdvertisement,
  thinPack,
  uploadPackResponse,
  receivePackAdvertisement,
  receivePackReport,
  rolloutRefs,
  statusNotes,
  httpRetryAfter,
  apiRequest,
  queryParams,
  githubWebhook,
  agentConfig,
  deviceCertificate,
  revocationsToml,
  ageSecret,
];

export function targetNamed(name: string): FuzzTarget | undefined {
  return TARGETS.find((t) => t.name === name);
}
