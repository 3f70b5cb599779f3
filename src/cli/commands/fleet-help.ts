// `keystonectl fleet status`'s usage and its --help text (fleet.ts runs the command). Apart from the command because
// the text is as long as the code, and keystonectl's usage needs only this.
export const FLEET_USAGE =
  'keystonectl fleet status [--repo URL|PATH] [--reports URL|PATH] [--ref BRANCH] [--commit REF] [--enrollment-key PUB …] [--devices] [--silent-after 10m] [--json] [--format text|markdown] [--token-file F] [--cache-dir DIR] [--depth N]';

export const FLEET_HELP = `${FLEET_USAGE}

The fleet's reports (each device's Git notes) for one commit, per target of the commit's fleet.toml.

  --repo URL|PATH     a local repository (work tree or bare), read as it is (default: the current directory), or an
                      http(s) remote: one \`git fetch\` of the branch and every device's notes ref into a cache
                      ($XDG_CACHE_HOME/keystone/fleet/<sha256 of the URL>, else ~/.cache/...; --cache-dir to move it).
                      Needs the git command. A token from --token-file or KEYSTONE_GIT_TOKEN is sent as the Basic-auth
                      password, as the agent does.
  --reports URL|PATH  where the devices report, when not to --repo (agents run with --status-repo): the notes and
                      rollout refs are read there (a remote: one fetch of every notes and rollout ref), the commit
                      and fleet.toml from --repo
  --ref BRANCH        the branch (default: main; for a local repository, HEAD)
  --commit REF        the commit to show (default: the tip of --ref)
  --enrollment-key F  the operator's enrolment public key (repeatable): each report is checked against its device's
                      certificate (devices/<name>.cert at the commit, else the one the device publishes with its
                      reports) and shown verified, unverified, forged or revoked (SPEC §15). A report that is not
                      counted shows as its verdict ("forged (says success)") with the reason; the rollout counts
                      what the devices' gates count. Without it no report can be verified: where the commit has a
                      devices/ directory (or [rollout] require_enrolled = true) every report then shows unverified
  --silent-after D    a device known to the fleet with no report on the commit, and none at all since the first
                      report on it (or the commit's time), is silent once D has passed (Go duration; default 10m)
  --devices           one line per device: name, target, (wave,) state (or "on <commit>", "silent"), time, description
  --json              { commit, ref, fleetFile, silentAfter, silentSince, silenceCounts,
                        targets: [{ name, plan, devices, success, failure, pending, error, otherCommit, silent,
                                    waiting, members }],
                        devices: [{ device, target, wave?, state, commit, relation, at, description, report?,
                                    reportReason?, claimed?, agent?, health?: { uptimeS?, load1?, memFreeBytes?,
                                    diskFreeBytes?, tempC? }, log? }],
                        agentVersions: { <version>|unknown: devices },
                        agentUpdate?: [{ wave?|target?, version, devices, on }],
                        rollout?: { commit, waves: [{ name, percent?, named?: { selector?, devices? }, devices,
                                    success, failed, applying, held, firstSuccessAt?, bakeLeftMs?, waitingFor?,
                                    state }], halted?: { wave, failed, of }, bake, minSuccess,
                                    abortFailurePercent, requireEnrolled, notCounted?: [{ device, wave, state,
                                    verdict, reason? }] } }
                      state: success|failure|pending|error|other-commit|silent|waiting, or forged|revoked|unverified
                      for a report on the commit that is not counted (claimed: what it said); report: verified|
                      unverified|forged|revoked; targets also count forged, revoked, unverified; relation (of another commit):
                      older|newer|unknown, else null. rollout, and each device's wave (null: unknown), only when the
                      commit's fleet.toml has a [rollout]. agentVersions: every device by the agent version its
                      newest report carries (unknown: none does); agentUpdate, when fleet.toml names an [agent]
                      version: per wave (with a [rollout]) or per target, how many of its devices run it
  --format markdown   tables for a pull-request comment or a CI summary
  --depth N           remote only: the history fetched (default 1; more tells older commits from other ones)

Agent versions (SPEC §17): "agent versions: 0.2.0 ×12, 0.1.0 ×3 (wave canary: 1 of 1 on 0.2.0)", the devices by
the agent version they run now (their newest report's), and how far the version fleet.toml names has come per wave
(else per target); shown once a report names a version or fleet.toml names one.

Rollouts: per wave of the commit's [rollout], from the devices' rollout refs (refs/keystone-rollout/...): devices
known in the wave (a ref on any commit), applied (success), failed (failure, error), applying, held (held, halted),
the bake left before the next wave applies, and the wave's state: done, baking, applying, waiting (for an earlier
wave's successes or bake) or halted (more than abort_failure_percent of a wave failed: "halted at canary: 3 of 20
failed"; every later wave is halted too). The bake left is an estimate: from the oldest success report of the wave,
stamped by that device's own clock, to the time of this read; each device times its own bake on the Git host's
clock, so it may open the next wave somewhat earlier or later than the estimate says.

The recipes' signatures are not checked: this view only reads (the reports' are, with --enrollment-key). Exit codes: 0 printed, 1 the remote could not be read,
2 bad input (a bad flag, an unknown ref or commit, a URL with credentials). A fleet.toml that does not parse is
printed as a warning with file:line (and as fleetFileErrors in --json); the devices are then grouped by the targets
they reported.`;
