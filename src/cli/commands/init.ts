// `keystone init`: writes a first configuration file. (Being written: see issue 17.)
import { UsageError, type CliIo } from '../io.js';

export const INIT_USAGE = 'keystone init [--config /etc/keystone/agent.toml] --repo URL|PATH [--device NAME] [--label KEY=VALUE…] [--trusted-key FILE…] [--plan PLAN] [--force]';

export async function initCommand(_argv: string[], _io: CliIo): Promise<number> {
  throw new UsageError('keystone init is not built yet');
}
