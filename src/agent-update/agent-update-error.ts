// Why a package named by [agent] is not switched to (SPEC §17): bad input (refused, reported `error`, nothing changes).
// KS_AGENT_UNSIGNED: [agent] is followed only from a signed revision (never under --allow-unsigned);
// KS_AGENT_PACKAGE_VERSION: the package's Debian Version is not [agent] version's (in Debian's form).
import { CodedError } from '../core/errors.js';

export type AgentUpdateCode =
  | 'KS_AGENT_PACKAGE_DIGEST'
  | 'KS_AGENT_NO_PACKAGE'
  | 'KS_AGENT_PACKAGE_INVALID'
  | 'KS_AGENT_DOWNGRADE'
  | 'KS_AGENT_UNSIGNED'
  | 'KS_AGENT_PACKAGE_VERSION';

export class AgentUpdateError extends CodedError<AgentUpdateCode, object> {}
