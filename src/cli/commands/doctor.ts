// `keystone doctor`: one line per check of this device, with the fix. (Being written: see issue 17.)
import { UsageError, type CliIo } from '../io.js';

export const DOCTOR_USAGE = 'keystone doctor [--config FILE] [agent flags…] [--json]';

export async function doctorCommand(_argv: string[], _io: CliIo): Promise<number> {
  throw new UsageError('keystone doctor is not built yet');
}
