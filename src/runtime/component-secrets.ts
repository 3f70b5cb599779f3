// What a runtime does with secrets (SPEC §16), in one place for processes and containers: values into the environment
// and files where an instance starts, the files removed where it ends, and a component's values kept out of what the
// runtime says about it (a failed script's last lines, a health check's output, a spawn error).
import type { DesiredComponent } from '../core/desired-state.js';
import type { SecretValues } from '../secrets/secret-vault.js';
import { RuntimeError } from './runtime-error.js';
import type { ProbeResult } from './probe.js';
import type { InstanceRef } from './runtime.js';
import { SecretFiles, type Placement, type PlacedSecrets } from './secret-files.js';
import { fillSecretEnv, scrubSecrets, secretTextsOf } from './secret-env.js';
import type { SecretsDir } from './secrets-root.js';

export interface ComponentSecretsOptions {
  kind: 'process' | 'container';
  /** The values, by digest (the agent's SecretVault); without it a component that reads a secret cannot start. */
  values?: SecretValues;
  /** Where secret files go (secrets-root.ts); without it a component with [[lifecycle.run.secrets]] cannot start. */
  root?: string | SecretsDir;
  /** Whether an instance recorded earlier still runs: the files of those that do not are removed. */
  alive: (ref: InstanceRef) => boolean | Promise<boolean>;
}

export class ComponentSecrets {
  private readonly files: SecretFiles | undefined;
  private swept = false;

  constructor(private readonly opts: ComponentSecretsOptions) {
    this.files =
      opts.root === undefined
        ? undefined
        : new SecretFiles({ root: opts.root, kind: opts.kind, values: () => opts.values });
  }

  /** `env` with its `{{secret.NAME}}` filled in (fillSecretEnv): only for the process being started, never for show. */
  env(c: DesiredComponent, env: Record<string, string>): Record<string, string> {
    return fillSecretEnv(c, env, this.opts.values);
  }

  /** `text` without any value `c` reads. */
  scrub(c: DesiredComponent, text: string): string {
    return c.secretDigests ? scrubSecrets(text, secretTextsOf(c, this.opts.values)) : text;
  }

  /**
   * A probe run with `c`'s environment filled in (at each probe: cheap, and a value unavailable is that probe's failure
   * rather than a binding that fails for good), its detail without `c`'s values (a `cmd:` check's output).
   */
  async probe(
    c: DesiredComponent,
    base: Record<string, string>,
    run: (env: Record<string, string>) => Promise<ProbeResult>,
  ): Promise<ProbeResult> {
    let env: Record<string, string>;
    try {
      env = this.env(c, base);
    } catch (e) {
      return { ok: false, detail: (e as Error).message, latencyMs: 0 };
    }
    const r = await run(env);
    return { ...r, detail: this.scrub(c, r.detail) };
  }

  /**
   * The files of `c` written for one start (undefined when it has none). Files of earlier instances that are gone
   * (`alive` says so) are removed first: of every component at the first start after the agent started (an agent
   * that was down when they exited), then of this component.
   */
  async place(c: DesiredComponent, where: Placement): Promise<PlacedSecrets | undefined> {
    if (!c.recipe.lifecycle.run.secrets?.length) return undefined;
    if (!this.files)
      throw new RuntimeError(
        'KS_SECRET_UNAVAILABLE',
        `${c.name} reads secrets as files, and this runtime was given no directory for them`,
        { component: c.name },
      );
    await this.files.sweep(this.opts.alive, this.swept ? c.name : undefined).catch(() => {}); // leftovers do not stop a start
    this.swept = true;
    return this.files.place(c, where);
  }

  /**
   * Removes the files of every instance that is gone: those an earlier agent left (it stopped, or its processes were
   * killed as orphans, while no runtime watched). Once the agent knows what runs (after adoption).
   */
  async sweep(): Promise<void> {
    this.swept = true;
    await this.files?.sweep(this.opts.alive);
  }

  /**
   * Removes the files of an instance that has stopped or exited (nothing when it had none). Never fails the stop it
   * follows: the instance is gone either way, and what could not be removed is swept at the next start.
   */
  async release(ref: InstanceRef): Promise<void> {
    await this.files?.release(ref).catch(() => {});
  }
}
