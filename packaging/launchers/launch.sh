# Sourced by /usr/bin/keystone and /usr/bin/keystonectl (installed as /usr/lib/keystone/launch.sh): picks the Node,
# refuses a CPU no Node ≥ 20 runs on, and execs the bundle. exec: under systemd the service's main pid is the agent
# itself, so SIGTERM reaches it. KEYSTONE_LIB (the bundle's directory) and KEYSTONE_NODE (a Node to run it with) are
# for tests and benchmarks of an uninstalled bundle: the package's build writes the installed launchers without them
# (packaging/build-deb.mjs), so that no environment a caller keeps (sudo -E) chooses the code root runs.
keystone_exec() {
  program=$1
  shift
  lib=${KEYSTONE_LIB:-/usr/lib/keystone}
  # A version the agent updated itself to (SPEC §17) runs from its home instead of the package's bundle; the launcher
  # and agent-rollback stay the package's, so that a new version that does not work cannot keep itself running.
  home=${KEYSTONE_AGENT_HOME:-/var/lib/keystone-agent}
  # Only the service's starts count (systemd sets INVOCATION_ID): not `keystone agent --help` at a shell.
  if [ "$program" = keystone ] && [ "${1:-}" = agent ] && [ -n "${INVOCATION_ID:-}" ] && [ -f "$home/trial" ]; then
    keystone_trial_start "$lib" "$home"
  fi
  if [ -f "$home/current/keystone.mjs" ]; then
    lib=$home/current
  fi
  # Debian's armhf and Node's own builds need ARMv7; Raspberry Pi OS's armhf also runs on the ARMv6 Pi Zero and 1,
  # where node would die of SIGILL before it could say why.
  machine=$(uname -m 2>/dev/null || true)
  case $machine in
    armv6* | armv5* | armv4*)
      echo "$program: this board's CPU ($machine) cannot run Node.js 20 or later, which needs ARMv7 or newer (a Raspberry Pi Zero or 1 is ARMv6; a Pi Zero 2, 3, 4 or 5 runs the arm64 package)" >&2
      exit 2
      ;;
  esac
  node=${KEYSTONE_NODE:-}
  if [ -z "$node" ]; then
    # The keystone-node package's Node when it is installed (the state store is built for it), else the system's.
    # Then the distribution's (what the package's Depends is met by), before whatever else is first on the PATH.
    for candidate in /usr/lib/keystone-node/bin/node /usr/bin/node /usr/bin/nodejs; do
      if [ -x "$candidate" ]; then
        node=$candidate
        break
      fi
    done
    [ -n "$node" ] || node=$(command -v node || command -v nodejs || true)
  fi
  if [ -z "$node" ]; then
    echo "$program: no Node.js to run it with: install the keystone-node package, or nodejs 20.19 or later" >&2
    exit 2
  fi
  # V8's young generation held at 1 MiB semi-spaces: a long-lived daemon on a small board trades a few more cheap
  # scavenges for ~30 MiB of memory (docs/agent.md, Memory; the agent sets the same for itself on Node 20 when run
  # otherwise).
  flags=--max-semi-space-size=1
  # The agent runs its JavaScript in V8's interpreter only: no Sparkplug, Maglev or TurboFan code (flags Node 18 knows
  # too, so that the bundle can still refuse it in one line; --max-opt=0 would stop it first). ~9 MiB less resident
  # with 50 components, for about twice the time to load a revision of 10,000 components (x1.3 at 1,000); a start of
  # 50, idle and Git polls cost the same (docs/agent.md, Memory). keystonectl, short-lived, keeps V8's tiers.
  if [ "$program" = keystone ]; then
    flags="$flags --no-opt --no-sparkplug"
  fi
  exec "$node" $flags "$lib/$program.mjs" "$@"
}

# A start of a version on probation: counted, and the deadline armed again. More than three starts without the
# trial being committed (the new agent exits, or the device lost power thrice) put the previous version back now;
# a new agent that runs but does not report success in time is put back by the timer (agent-rollback --restart).
keystone_trial_start() {
  package_lib=$1
  trial_home=$2
  echo start >>"$trial_home/trial-starts"
  starts=$(wc -l <"$trial_home/trial-starts")
  if [ "$starts" -gt 3 ]; then
    KEYSTONE_AGENT_HOME=$trial_home KEYSTONE_UNIT=keystone.service /bin/sh "$package_lib/agent-rollback" "the new agent did not come up: $((starts - 1)) starts without reporting success"
    return 0
  fi
  deadline=$(sed -n 's/^deadline=//p' "$trial_home/trial" | head -n 1)
  case $deadline in '' | *[!0-9]*) deadline=300 ;; esac
  since=$(sed -n 's/^since=//p' "$trial_home/trial" | head -n 1)
  case $since in '' | *[!0-9]*) since=0 ;; esac
  if [ -d /run/systemd/system ]; then
    # Not arming the timer must not stop this start (the start count above still puts a version back that does not
    # come up), but it is said, in the journal: such a version that runs without reporting success stays.
    if ! command -v systemd-run >/dev/null 2>&1; then
      echo "keystone: no systemd-run to arm the deadline timer keystone-agent-deadline: a new agent that runs but does not report success within ${deadline}s will not be put back" >&2
      return 0
    fi
    systemctl stop keystone-agent-deadline.timer >/dev/null 2>&1 || true
    systemctl reset-failed keystone-agent-deadline.timer keystone-agent-deadline.service >/dev/null 2>&1 || true
    systemd-run --quiet --unit=keystone-agent-deadline --on-active="$deadline" --timer-property=AccuracySec=1s \
      --setenv=KEYSTONE_AGENT_HOME="$trial_home" --setenv=KEYSTONE_UNIT=keystone.service \
      /bin/sh "$package_lib/agent-rollback" --restart --only-since "$since" "the new agent did not report success within ${deadline}s" ||
      echo "keystone: systemd-run failed (exit $?) to arm the deadline timer keystone-agent-deadline: a new agent that runs but does not report success within ${deadline}s will not be put back (its message is above)" >&2
  fi
}
