// Debian's chromium, driven by playwright-core (which downloads no browser of its own): the dashboard's browser tests
// (test/dashboard) launch it here, one browser per test file and a fresh context per test. The flags keep it from
// reaching out to the network on its own (component updates, sync, first-run pages), so that what a test sees on the
// wire is the page's doing; no sandbox, because the tests run as root in CI, where chromium's sandbox refuses to start.
import { chromium, type Browser } from 'playwright-core';
import { chromiumExecutable, missingReason } from './requirement-checks.js';

export const CHROMIUM_ARGS: readonly string[] = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export interface LaunchOptions {
  /** More command-line flags, e.g. `--host-resolver-rules=MAP evil.test 127.0.0.1`. */
  args?: string[];
}

/** A headless chromium; the caller closes it (afterAll). Throws with the requirement's fix when there is none. */
export async function launchChromium(opts: LaunchOptions = {}): Promise<Browser> {
  const executablePath = chromiumExecutable();
  if (executablePath === undefined) throw new Error(missingReason('chromium') ?? 'chromium is not installed');
  return chromium.launch({
    executablePath,
    headless: true,
    args: [...CHROMIUM_ARGS, ...(opts.args ?? [])],
    timeout: 60_000,
  });
}
