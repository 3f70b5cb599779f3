#!/usr/bin/env bash
# The agent updates itself through the repository (SPEC §17, docs/install.md "Updating the agent"), on a device
# played by a Debian 12 container booting systemd as PID 1, as the package tests run it (test/packaging/):
#   1. three packages: keystone 0.1.0 and 0.2.0 (packaging/build-deb.mjs), and a broken 0.3.0 (it installs and
#      answers --version, but the agent exits at start);
#   2. a signed fleet repository (the example stack: recipes/, plans/, artifacts/, a fleet.toml), a bare repository
#      on this machine that the device follows in place (mounted at /srv/git), and one it reports to;
#   3. keystone 0.1.0 installed with dpkg -i and started with systemctl: it runs the example stack;
#   4. a commit with [agent] version = "0.2.0": the device stages 0.2.0 beside 0.1.0, hands over to it, and the new
#      agent adopts the four components (same pids) and reports success: the trial is committed;
#   5. a commit naming 0.3.0: the new agent exits at every start, 0.2.0 is put back, and the device reports failure.
#   bash examples/agent-update/walkthrough.sh [--json] [--stop-after N]
# (as root, from the checkout, after `npm ci && npm run build`; --stop-after 3 ends once 0.1.0 runs the stack).
# Needs a Docker engine, debootstrap and dpkg-deb. With --json the steps go to stderr and stdout gets one JSON line:
# versionBefore, versionAfter, componentPidsBefore, componentPidsAfter, componentPidsAfterBroken, versionAfterBroken,
# brokenReport, brokenReason, systemd, package. The container and the work directory are removed at the end
# (KEYSTONE_WALKTHROUGH_KEEP=1 keeps both, to look around: docker exec -it NAME bash).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
json=false stop_after=5
while [ $# -gt 0 ]; do
  a=$1 && shift
  case $a in
    --json) json=true ;;
    --stop-after) stop_after=${1:?--stop-after needs a step number} && shift ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "walkthrough.sh: unknown argument $a (usage: walkthrough.sh [--json] [--stop-after N])" >&2; exit 2 ;;
  esac
done
# With --json everything but the last line goes to stderr.
exec 3>&1
$json && exec 1>&2

V1=0.1.0 V2=0.2.0 V3=0.3.0
DEVICE=edge-1
# How long the new agent has to report success ([agent] deadline), and how long a step may take here.
DEADLINE=2m
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
# agent_section VERSION FILE: fleet.toml's [agent] table for the package FILE in /debs (mounted from W/debs).
agent_section() {
  printf '\n# The agent every device runs (SPEC §17): a new version is staged beside the running one, and put back\n'
  printf '# unless it reports success within the deadline.\n'
  printf '[agent]\nversion = "%s"\ndeadline = "%s"\n\n[agent.packages.%s]\nuri = "file:///debs/%s"\nsha256 = "%s"\n' \
    "$1" "$DEADLINE" "$arch" "$2" "$(sha256sum "$W/debs/$2" | cut -d' ' -f1)"
}
release() { # $1: fleet.toml's contents, $2: the commit message; prints the commit
  printf '%s\n' "$1" >"$W/fleet/fleet.toml"
  (cd "$W/fleet" && keystonectl sign --key "$W/release.key" --ref main >/dev/null && git add -A && git commit -qm "$2" && git push -q origin main && git rev-parse HEAD)
}

echo "== 1. three packages: keystone $V1 and $V2 (packaging/build-deb.mjs), and $V3, broken: it exits at start"
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
broken_report=$(device "outcome('$c3')")
broken_reason=$(device 'home.failed.reason')
pids_after_broken=$(device 'pids')
echo "   keystone $(shows 'agent.version') answers again (pid $(shows 'mainPid')); ${c3:0:12}: $(shows "outcome('$c3')"), $(shows 'home.failed.reason')"
echo "   keystonectl status --json, revision.agent.update: $(device 'agent.update ?? null')"
note=$(git --git-dir "$W/git/reports.git" notes --ref "keystone-devices/$DEVICE" show "$c3" 2>/dev/null || true)
[ -z "$note" ] || echo "   the device's report on the commit: $note"
echo "   components: $pids_after_broken"

if $json; then
  node -e '
    const [before, after, pidsBefore, pidsAfter, afterBroken, pidsAfterBroken, report, reason, systemd, pkg] = process.argv.slice(1);
    console.log(JSON.stringify({
      versionBefore: JSON.parse(before), versionAfter: JSON.parse(after),
      componentPidsBefore: JSON.parse(pidsBefore), componentPidsAfter: JSON.parse(pidsAfter),
      versionAfterBroken: JSON.parse(afterBroken), componentPidsAfterBroken: JSON.parse(pidsAfterBroken),
      brokenReport: JSON.parse(report), brokenReason: JSON.parse(reason), systemd: systemd === "true", package: pkg,
    }));' "$version_before" "$version_after" "$pids_before" "$pids_after" "$version_after_broken" "$pids_after_broken" \
    "$broken_report" "$broken_reason" "$systemd" "$deb2" >&3
fi
