#!/usr/bin/env bash
# The agent updates itself through the repository (SPEC §17, docs/install.md "Updating the agent"), on a device
# played by a Debian 12 container booting systemd as PID 1, as the package tests run it (test/packaging/):
#   1. four packages: keystone 0.1.0 and 0.2.0 (packaging/build-deb.mjs), a broken 0.3.0 (it installs and answers
#      --version, but the agent exits at start), and a 0.3.1 that hangs (its agent starts and stays up, but never
#      reports success);
#   2. a signed fleet repository (the example stack: recipes/, plans/, artifacts/, a fleet.toml), a bare repository
#      on this machine that the device follows in place (mounted at /srv/git), and one it reports to;
#   3. keystone 0.1.0 installed with dpkg -i and started with systemctl: it runs the example stack;
#   4. a commit with [agent] version = "0.2.0": the device stages 0.2.0 beside 0.1.0, hands over to it, and the new
#      agent adopts the four components (same pids) and reports success: the trial is committed;
#   5. a commit naming 0.3.0: the new agent exits at every start, 0.2.0 is put back (by the launcher, at the fourth
#      start), and the device reports failure: the report it pushed to its reports repository says so;
#   6. a commit naming 0.3.1 with [agent] deadline = "20s": the new agent starts once and hangs, the deadline's timer
#      (keystone-agent-deadline, armed by the launcher) puts 0.2.0 back, the components keep running, and the device
#      reports failure naming the deadline.
#   bash examples/agent-update/walkthrough.sh [--json] [--stop-after N]
# (as root, from the checkout, after `npm ci && npm run build`; --stop-after 3 ends once 0.1.0 runs the stack).
# Needs a Docker engine, debootstrap and dpkg-deb. With --json the steps go to stderr and stdout gets one JSON line:
# versionBefore, versionAfter, componentPidsBefore, componentPidsAfter, versionAfterBroken, brokenReport (the state of
# the device's report on the broken commit, as it pushed it), systemd, package; and beside them
# componentPidsAfterBroken, brokenReason, brokenReportAgent, versionAfterDeadline, componentPidsAfterDeadline,
# deadlineReport, deadlineReportAgent, deadlineReportDescription, deadlineReason, deadlineTrialStarts, deadlineRollbackBy. The
# container and the work directory are removed at the end (KEYSTONE_WALKTHROUGH_KEEP=1 keeps both, to look around:
# docker exec -it NAME bash).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
json=false stop_after=6
while [ $# -gt 0 ]; do
  a=$1 && shift
  case $a in
    --json) json=true ;;
    --stop-after) stop_after=${1:?--stop-after needs a step number} && shift ;;
    -h | --help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "walkthrough.sh: unknown argument $a (usage: walkthrough.sh [--json] [--stop-after N])" >&2; exit 2 ;;
  esac
done
# With --json everything but the last line goes to stderr.
exec 3>&1
$json && exec 1>&2

V1=0.1.0 V2=0.2.0 V3=0.3.0 V4=0.3.1
DEVICE=edge-1
# How long the new agent has to report success ([agent] deadline), and how long a step may take here. The hanging
# 0.3.1 gets a short one (step 6): its timer, not the walkthrough's patience, puts 0.2.0 back.
DEADLINE=2m HANG_DEADLINE=20s
STEP_SECONDS=${KEYSTONE_WALKTHROUGH_STEP_SECONDS:-240}

die() { echo "walkthrough.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run it as root: it starts a container booting systemd and builds packages with dpkg-deb"
for tool in docker dpkg-deb debootstrap git node; do command -v "$tool" >/dev/null || die "$tool is not installed (docs/testing.md: what the tests need)"; done
docker info >/dev/null 2>&1 || die "no Docker engine answered (start dockerd)"
[ -f "$top/dist/cli/keystonectl.js" ] || die "no dist/ in $top: run npm ci && npm run build first"

W=$(mktemp -d "${TMPDIR:-/tmp}/ks-agent-update.XXXXXX")
cname=
# On a failure: what the device shows (the agent's journal, its update files), then the container and W go.
finish() {
  local rc=$?
  if [ "$rc" != 0 ] && [ -n "$cname" ]; then
    echo "-- the device after the failure (container $cname):"
    docker exec "$cname" sh -c 'systemctl status keystone --no-pager 2>&1 | head -15; echo "-- /var/lib/keystone-agent:"; ls -la /var/lib/keystone-agent /var/lib/keystone-agent/versions 2>&1;
      for f in trial trial-starts failed; do [ -f /var/lib/keystone-agent/$f ] && { echo "-- $f:"; cat /var/lib/keystone-agent/$f; }; done;
      echo "-- timers:"; systemctl list-timers --all --no-pager 2>&1 | grep -i keystone; echo "-- journalctl -u keystone (last 60 lines):"; journalctl -u keystone --no-pager -n 60 2>&1' >&2 || true
  fi
  if [ "${KEYSTONE_WALKTHROUGH_KEEP:-}" = 1 ]; then
    echo "kept: the container ${cname:-(none)} and $W" >&2
  else
    [ -z "$cname" ] || docker rm -f -v "$cname" >/dev/null 2>&1 || true
    rm -rf "$W"
  fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

export GIT_AUTHOR_NAME=${GIT_AUTHOR_NAME:-ops} GIT_AUTHOR_EMAIL=${GIT_AUTHOR_EMAIL:-ops@example.com}
export GIT_COMMITTER_NAME=${GIT_COMMITTER_NAME:-ops} GIT_COMMITTER_EMAIL=${GIT_COMMITTER_EMAIL:-ops@example.com}
keystonectl() { node "$top/bin/keystonectl.js" "$@"; }
in_device() { docker exec "$cname" sh -c "$1"; }
# device EXPR: what the device shows, tested by a JavaScript expression (examples/agent-update/device.mjs says what is
# in scope); prints its value.
device() { node "$here/device.mjs" "$cname" "$1"; }
shows() { node "$here/device.mjs" --raw "$cname" "$1"; }
# until_device SECONDS WHAT EXPR: polls `device EXPR` until it holds, at most SECONDS; fails naming WHAT and the last look.
until_device() {
  local end=$((SECONDS + $1)) what=$2 expr=$3
  until device "$expr" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$end" ]; then
      echo "timed out after $1 s waiting for $what; the device shows:"
      device '{ revision, agent, update: agent && agent.update, pids, healthy, mainPid, home, history: history.slice(0, 4).map((e) => `${e.revision} ${e.outcome} ${e.summary}`) }' || true
      die "timed out waiting for $what"
    fi
    sleep 1
  done
}
# Each component's process as pid@start-time (/proc/PID/stat field 22): a pid given to another process is another identity.
identities() {
  local pids_json=$1
  node -e 'for (const [n, p] of Object.entries(JSON.parse(process.argv[1]))) console.log(n, p)' "$pids_json" | while read -r n p; do
    echo "$n $p@$(in_device "cut -d')' -f2- /proc/$p/stat 2>/dev/null | cut -d' ' -f21" || echo gone)"
  done
}
# agent_section VERSION FILE [DEADLINE]: fleet.toml's [agent] table for the package FILE in /debs (mounted from W/debs).
agent_section() {
  printf '\n# The agent every device runs (SPEC §17): a new version is staged beside the running one, and put back\n'
  printf '# unless it reports success within the deadline.\n'
  printf '[agent]\nversion = "%s"\ndeadline = "%s"\n\n[agent.packages.%s]\nuri = "file:///debs/%s"\nsha256 = "%s"\n' \
    "$1" "${3:-$DEADLINE}" "$arch" "$2" "$(sha256sum "$W/debs/$2" | cut -d' ' -f1)"
}
# reported COMMIT: the device's entry in the note on COMMIT in its reports repository (what it pushed, on
# refs/notes/keystone-devices/DEVICE), as JSON { state, time, fields, description }; exits 0 once the state is final
# (success, failure or error), 1 while it is pending or there is no entry yet.
reported() {
  local note
  note=$(git --git-dir "$W/git/reports.git" notes --ref "keystone-devices/$DEVICE" show "$1" 2>/dev/null) || { echo null; return 1; }
  node -e '
    const [context, note] = process.argv.slice(1);
    const line = note.split("\n").find((l) => l.startsWith(`${context} `));
    if (!line) { console.log("null"); process.exit(1); }
    const [, state, time, ...rest] = line.split(" ");
    const fields = {};
    while (rest.length && /^[a-z]+=\S*$/.test(rest[0])) { const f = rest.shift(); fields[f.slice(0, f.indexOf("="))] = f.slice(f.indexOf("=") + 1); }
    console.log(JSON.stringify({ state, time, fields, description: rest.join(" ") }));
    process.exit(["success", "failure", "error"].includes(state) ? 0 : 1);' "keystone/$DEVICE" "$note"
}
# until_reported SECONDS COMMIT: waits for the device's final report on COMMIT in its reports repository; prints it.
until_reported() {
  local end=$((SECONDS + $1))
  until reported "$2" >/dev/null; do
    [ "$SECONDS" -lt "$end" ] || die "timed out after $1 s waiting for the device's report on ${2:0:12} in $W/git/reports.git (it shows: $(reported "$2"))"
    sleep 1
  done
  reported "$2"
}
# field JSON EXPR: EXPR of the parsed JSON (as v), as JSON.
field() { node -e 'const v = JSON.parse(process.argv[1]); const r = eval(process.argv[2]); console.log(JSON.stringify(r ?? null))' "$1" "$2"; }
release() { # $1: fleet.toml's contents, $2: the commit message; prints the commit
  printf '%s\n' "$1" >"$W/fleet/fleet.toml"
  (cd "$W/fleet" && keystonectl sign --key "$W/release.key" --ref main >/dev/null && git add -A && git commit -qm "$2" && git push -q origin main && git rev-parse HEAD)
}

echo "== 1. four packages: keystone $V1 and $V2 (packaging/build-deb.mjs); $V3, broken: it exits at start; $V4: it hangs"
node "$here/debian.mjs" packages "$W" "$V1" "$V2" "$V3" >"$W/debs.json"
built() { node -e 'const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(eval(process.argv[2]) ?? "")' "$W/debs.json" "$1"; }
arch=$(built d.arch)
cache=$(built d.dir)
mkdir -p "$W/debs"
for f in "$(built d.node)" "$(built "d.files['$V1']")" "$(built "d.files['$V2']")"; do
  [ -n "$f" ] || continue
  ln "$cache/$f" "$W/debs/$f" 2>/dev/null || cp "$cache/$f" "$W/debs/$f"
done
deb1=$(built "d.files['$V1']") deb2=$(built "d.files['$V2']") deb3=$(built "d.files['$V3']") node_deb=$(built d.node)
# The broken one: 0.3.0's package with its agent replaced by a program that answers --version and exits 1 otherwise
# (its md5sums line updated, so that the package is consistent).
dpkg-deb -R "$cache/$deb3" "$W/broken"
cat >"$W/broken/usr/lib/keystone/keystone.mjs" <<EOF
// keystone $V3, broken on purpose (examples/agent-update/walkthrough.sh): it answers --version, and exits 1 at start.
if (process.argv.includes('--version')) {
  console.log('keystone $V3');
  process.exit(0);
}
console.error('keystone $V3: broken on purpose: exiting at start');
process.exit(1);
EOF
sum=$(cd "$W/broken" && md5sum usr/lib/keystone/keystone.mjs)
sed -i "s#^[0-9a-f]*  usr/lib/keystone/keystone.mjs\$#$sum#" "$W/broken/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zgzip -b "$W/broken" "$W/debs/$deb3" >/dev/null
rm -rf "$W/broken"
# The hanging one, built the same way from 0.3.0's package, its control Version made $V4: an agent that starts and
# stays up (the unit's main process, as a working agent is) but never gets to report success, like an agent stuck
# before its first revision. Only the deadline's timer can tell it from one that is slow.
deb4=${deb3/_${V3}_/_${V4}_}
dpkg-deb -R "$cache/$deb3" "$W/hang"
sed -i "s/^Version: .*/Version: $V4/" "$W/hang/DEBIAN/control"
cat >"$W/hang/usr/lib/keystone/keystone.mjs" <<EOF
// keystone $V4, hanging on purpose (examples/agent-update/walkthrough.sh): it answers --version, and at start it stays
// up without ever reporting success, until it is stopped.
if (process.argv.includes('--version')) {
  console.log('keystone $V4');
  process.exit(0);
}
console.error('keystone $V4: hanging on purpose: started, and never reports success');
setInterval(() => {}, 60_000);
EOF
sum=$(cd "$W/hang" && md5sum usr/lib/keystone/keystone.mjs)
sed -i "s#^[0-9a-f]*  usr/lib/keystone/keystone.mjs\$#$sum#" "$W/hang/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zgzip -b "$W/hang" "$W/debs/$deb4" >/dev/null
rm -rf "$W/hang"
ls -l "$W/debs" | sed 1d | awk '{ print "   " $5 "  " $9 }'

echo "== 2. the fleet repository: the example stack, signed, a bare repository the device follows in place"
keystonectl keygen --out "$W/release" --no-password >/dev/null
mkdir -p "$W/fleet" "$W/git"
cp -r "$top/recipes" "$top/plans" "$top/artifacts" "$W/fleet/"
FLEET='# The walkthrough'"'"'s fleet: every device runs the example stack, its components as processes.
[[targets]]
name = "edge"
selector = {}
plan = "plans/edge-processes.toml"'
for repo in fleet reports; do git init -q --bare -b main "$W/git/$repo.git"; done
(cd "$W/fleet" && git init -q -b main && git remote add origin "$W/git/fleet.git")
c1=$(release "$FLEET" "the example stack")
echo "   $W/git/fleet.git (in the device: /srv/git/fleet.git) at ${c1:0:12}, signed with $W/release.key for main"

echo "== 3. a Debian 12 container booting systemd; keystone $V1 installed with dpkg -i and started by systemctl"
cname=$(node "$here/debian.mjs" start "$W" "$W/debs" "$W/git:/srv/git")
in_device "dpkg -i ${node_deb:+/debs/$node_deb} /debs/$deb1 >/dev/null"
docker cp "$W/release.pub" "$cname:/etc/keystone/keys/release.pub"
# The example's recipes run `node fake-….mjs`: the device's own Node on PATH (Debian 12's is too old).
node_bin=/usr/lib/keystone-node/bin/node
[ -n "$node_deb" ] || node_bin=/usr/bin/node
in_device "chown root:root /etc/keystone/keys/release.pub && chmod 0644 /etc/keystone/keys/release.pub && ln -sf $node_bin /usr/local/bin/node"
docker exec -i "$cname" sh -c 'cat > /etc/keystone/agent.toml' <<EOF
repo = "/srv/git/fleet.git"
ref = "main"
status-repo = "/srv/git/reports.git"
poll = "2s"
device = "$DEVICE"
trusted-key = ["/etc/keystone/keys/release.pub"]
require-ref = true
# SPEC §17: this device installs the agent version the signed fleet.toml names.
allow-agent-update = true
log-format = "json"
EOF
in_device "chmod 0640 /etc/keystone/agent.toml && systemctl enable --now keystone 2>/dev/null"
until_device "$STEP_SECONDS" "keystone $V1 to run the example stack at ${c1:0:12}" \
  "healthy && revision === '$c1' && agent?.version === '$V1' && agent?.pid === mainPid && outcome('$c1') === 'success'"
version_before=$(device 'agent.version')
pids_before=$(device 'pids')
identities "$pids_before" >"$W/identities-before"
systemd=$(in_device 'test "$(cat /proc/1/comm)" = systemd && systemctl is-active --quiet keystone && echo true || echo false')
echo "   $(in_device 'keystone --version') (pid $(shows 'mainPid')), keystone.service under systemd as PID 1: $systemd"
echo "   components: $pids_before"
[ "$stop_after" -gt 3 ] || { echo "== stopped after step 3 (--stop-after 3)"; exit 0; }

echo "== 4. keystone $V2 through the repository: [agent] version = \"$V2\", the package by URI and sha256"
c2=$(release "$FLEET$(agent_section "$V2" "$deb2")" "agent $V2")
echo "   commit ${c2:0:12}: $(sed -n '/^\[agent\]/,$p' "$W/fleet/fleet.toml" | grep -E '^(version|uri|sha256)' | tr '\n' ' ')"
until_device "$STEP_SECONDS" "the device to take commit ${c2:0:12} (the update to $V2)" "revision === '$c2' || home.trial !== null || agent?.version === '$V2'"
echo "   the device took it: $(device '{ version: agent?.version, update: agent?.update ?? null, trial: home.trial?.version ?? null, current: home.current }')"
until_device "$STEP_SECONDS" "keystone $V2 to answer and its trial to be committed" \
  "agent?.version === '$V2' && agent.pid === mainPid && home.trial === null && revision === '$c2' && outcome('$c2') === 'success' && healthy && agent.update?.state !== 'trial'"
version_after=$(device 'agent.version')
pids_after=$(device 'pids')
identities "$pids_after" >"$W/identities-after"
echo "   keystone $V2 answers (pid $(shows 'mainPid'), from /var/lib/keystone-agent/$(shows 'home.current')), success for ${c2:0:12}, the trial committed"
echo "   components: $pids_after"
diff -u "$W/identities-before" "$W/identities-after" >&2 || die "the update to $V2 restarted components (pid@start-time before and after above)"

echo "== 5. keystone $V3, broken, through the repository: the new agent exits at start, $V2 is put back"
c3=$(release "$FLEET$(agent_section "$V3" "$deb3")" "agent $V3")
echo "   commit ${c3:0:12} names $V3"
until_device "$STEP_SECONDS" "$V3 to be put back and the device to report on commit ${c3:0:12}" \
  "home.failed?.version === '$V3' && home.trial === null && agent?.version === '$V2' && agent.pid === mainPid && outcome('$c3') !== undefined && outcome('$c3') !== 'applying' && healthy && agent.update?.state === 'failed'"
version_after_broken=$(device 'agent.version')
broken_reason=$(device 'home.failed.reason')
pids_after_broken=$(device 'pids')
identities "$pids_after_broken" >"$W/identities-after-broken"
echo "   keystone $(shows 'agent.version') answers again (pid $(shows 'mainPid')); ${c3:0:12}: $(shows "outcome('$c3')"), $(shows 'home.failed.reason')"
echo "   keystonectl status --json, revision.agent.update: $(device 'agent.update ?? null')"
diff -u "$W/identities-before" "$W/identities-after-broken" >&2 || die "putting $V2 back restarted components (pid@start-time before and after above)"
# What the device reported, as it pushed it (not its local history): the note on the commit in its reports repository.
broken_note=$(until_reported "$STEP_SECONDS" "$c3")
broken_report=$(field "$broken_note" 'v.state')
broken_report_agent=$(field "$broken_note" 'v.fields.agent')
echo "   the device's report on ${c3:0:12} (git notes --ref keystone-devices/$DEVICE show ${c3:0:12} in reports.git): $(git --git-dir "$W/git/reports.git" notes --ref "keystone-devices/$DEVICE" show "$c3" | head -n 1)"
[ "$broken_report" = '"failure"' ] || die "the device reported $broken_report on ${c3:0:12}, not failure"
echo "   components: $pids_after_broken"
[ "$stop_after" -gt 5 ] || { echo "== stopped after step 5 (--stop-after 5)"; exit 0; }

echo "== 6. keystone $V4, hanging, through the repository with [agent] deadline = \"$HANG_DEADLINE\": the timer puts $V2 back"
c4=$(release "$FLEET$(agent_section "$V4" "$deb4" "$HANG_DEADLINE")" "agent $V4, deadline $HANG_DEADLINE")
echo "   commit ${c4:0:12} names $V4, deadline = \"$HANG_DEADLINE\""
# While 0.3.1 hangs no agent answers keystonectl: what the device shows is read from its files and from systemd. The
# trial written, `current` on 0.3.1 and the deadline's timer armed by the launcher at the new agent's start (the
# launcher runs before the agent does); or, on a machine too slow to look within the deadline, already put back.
probation="grep -qx 'version=$V4' /var/lib/keystone-agent/trial 2>/dev/null && [ \"\$(readlink /var/lib/keystone-agent/current)\" = versions/$V4 ] && systemctl is-active --quiet keystone-agent-deadline.timer"
end=$((SECONDS + STEP_SECONDS))
until in_device "$probation"; do
  if in_device "grep -qx 'version=$V4' /var/lib/keystone-agent/failed 2>/dev/null"; then
    echo "   (the device was slower to look at than the deadline: $V4 was put back before the walkthrough saw its trial)"
    break
  fi
  [ "$SECONDS" -lt "$end" ] || die "timed out after $STEP_SECONDS s waiting for the device to hand over to $V4 (commit ${c4:0:12}) with the deadline's timer armed"
  sleep 1
done
if in_device "$probation"; then
  hang_pid=$(in_device 'systemctl show -p MainPID --value keystone.service')
  echo "   $V4 runs on probation: keystone.service's main pid $hang_pid is $(in_device "tr '\\0' ' ' </proc/$hang_pid/cmdline" || echo '?')"
  echo "   the timer: $(in_device 'systemctl list-timers --all --no-pager keystone-agent-deadline.timer | sed -n 2p' | tr -s ' ')"
fi
until_device "$STEP_SECONDS" "the deadline's timer to put $V2 back and the device to report on commit ${c4:0:12}" \
  "home.failed?.version === '$V4' && home.trial === null && agent?.version === '$V2' && agent.pid === mainPid && outcome('$c4') !== undefined && outcome('$c4') !== 'applying' && healthy && agent.update?.state === 'failed'"
version_after_deadline=$(device 'agent.version')
deadline_reason=$(device 'home.failed.reason')
pids_after_deadline=$(device 'pids')
identities "$pids_after_deadline" >"$W/identities-after-deadline"
# Who put it back: the timer's service says so in its journal (agent-rollback), and the hanging agent started once
# (the launcher's fourth-start check, which caught 0.3.0, never came into it).
rollback_by=$(in_device "journalctl -u keystone-agent-deadline.service --no-pager -o cat 2>/dev/null | grep -q 'agent $V4 put back' && echo keystone-agent-deadline || echo unknown")
trial_starts=$(in_device "journalctl -u keystone.service --no-pager -o cat 2>/dev/null | grep -c 'keystone $V4: hanging on purpose' || true")
echo "   keystone $(shows 'agent.version') answers again (pid $(shows 'mainPid')); put back by: $rollback_by; $V4 started $trial_starts time(s); ${c4:0:12}: $(shows "outcome('$c4')"), $(shows 'home.failed.reason')"
diff -u "$W/identities-before" "$W/identities-after-deadline" >&2 || die "putting $V2 back after the deadline restarted components (pid@start-time before and after above)"
[ "$rollback_by" = keystone-agent-deadline ] || die "$V4 was put back, but not by the deadline's timer (journalctl -u keystone-agent-deadline.service has no 'agent $V4 put back')"
deadline_note=$(until_reported "$STEP_SECONDS" "$c4")
deadline_report=$(field "$deadline_note" 'v.state')
deadline_report_agent=$(field "$deadline_note" 'v.fields.agent')
deadline_description=$(field "$deadline_note" 'v.description')
echo "   the device's report on ${c4:0:12}: $(git --git-dir "$W/git/reports.git" notes --ref "keystone-devices/$DEVICE" show "$c4" | head -n 1)"
[ "$deadline_report" = '"failure"' ] || die "the device reported $deadline_report on ${c4:0:12}, not failure"
echo "   components: $pids_after_deadline"

if $json; then
  node -e '
    const [before, after, pidsBefore, pidsAfter, afterBroken, pidsAfterBroken, report, reportAgent, reason, systemd, pkg,
      afterDeadline, pidsAfterDeadline, dReport, dReportAgent, dDescription, dReason, dStarts, dBy] = process.argv.slice(1);
    console.log(JSON.stringify({
      versionBefore: JSON.parse(before), versionAfter: JSON.parse(after),
      componentPidsBefore: JSON.parse(pidsBefore), componentPidsAfter: JSON.parse(pidsAfter),
      versionAfterBroken: JSON.parse(afterBroken), brokenReport: JSON.parse(report), systemd: systemd === "true", package: pkg,
      componentPidsAfterBroken: JSON.parse(pidsAfterBroken), brokenReason: JSON.parse(reason), brokenReportAgent: JSON.parse(reportAgent),
      versionAfterDeadline: JSON.parse(afterDeadline), componentPidsAfterDeadline: JSON.parse(pidsAfterDeadline),
      deadlineReport: JSON.parse(dReport), deadlineReportAgent: JSON.parse(dReportAgent), deadlineReportDescription: JSON.parse(dDescription),
      deadlineReason: JSON.parse(dReason), deadlineTrialStarts: Number(dStarts), deadlineRollbackBy: dBy,
    }));' "$version_before" "$version_after" "$pids_before" "$pids_after" "$version_after_broken" "$pids_after_broken" \
    "$broken_report" "$broken_report_agent" "$broken_reason" "$systemd" "$deb2" \
    "$version_after_deadline" "$pids_after_deadline" "$deadline_report" "$deadline_report_agent" "$deadline_description" \
    "$deadline_reason" "$trial_starts" "$rollback_by" >&3
fi
