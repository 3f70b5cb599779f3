// Why a package named by [agent] is not switched to (SPEC §17): bad input (refused, reported `error`, nothing changes).
import { CodedError } from '../core/errors.js';

export type AgentUpdateCode = 'KS_AGENT_PACKAGE_DIGEST' | 'KS_AGENT_NO_PACKAGE' | 'KS_AGENT_PACKAGE_INVALID' | 'KS_AGENT_DOWNGRADE';

export class AgentUpdateError extends CodedError<AgentUpdateCode, object> {}
