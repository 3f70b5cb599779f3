#!/usr/bin/env bash
# A small fleet on one machine (docs/fleets.md): three devices with their own names and labels
# follow one signed repository over Git's smart HTTP, on two targets of fleet.toml, and report to a repository of
# their own (so that a device needs only read access to the one it follows: docs/security.md). One push deploys to all
# three; `keystonectl fleet status` shows them per target; a pull request's dry run shows both targets; the merge is
# signed for main (`sign --ref main`), and the devices count only signatures made for the branch they follow.
#   bash examples/fleet/walkthrough.sh [WORK_DIR]      (from the Keystone checkout, after `npm ci && npm run build`)
# Everything lives under WORK_DIR (default: a new temporary directory) and stops when the script ends.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
W=${1:-$(mktemp -d)} && mkdir -p "$W"
# The components run as nobody (no user in their recipes): they must be able to reach their work directories under W.
chmod 0755 "$W"
PORT=${KEYSTONE_WALKTHROUGH_PORT:-8418}
keystonectl() { node "$top/bin/keystonectl.js" "$@"; }
pids=()
# The agents run with --stop-on-exit: stopping them stops their components too.
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
export GIT_AUTHOR_NAME=${GIT_AUTHOR_NAME:-ops} GIT_AUTHOR_EMAIL=${GIT_AUTHOR_EMAIL:-ops@example.com}
export GIT_COMMITTER_NAME=${GIT_COMMITTER_NAME:-ops} GIT_COMMITTER_EMAIL=${GIT_COMMITTER_EMAIL:-ops@example.com}
# Waits up to $1 seconds for the command after it to succeed.
until_ok() { local n=$1; shift; for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done; "$@"; }

echo "== the fleet repository: recipes, plans and fleet.toml, signed"
keystonectl keygen --out "$W/release" --no-password >/dev/null
cp -r "$here" "$W/fleet" && rm "$W/fleet/walkthrough.sh" && cd "$W/fleet"
git init -q -b main && keystonectl sign --key "$W/release.key" --ref main >/dev/null
git add -A && git commit -qm "fleet v1"

echo "== served over smart HTTP: the fleet repository, and one for the devices' reports"
# Over HTTP the fleet repository is read-only (the devices' view of it); the operator pushes to it as a path. The
# reports repository takes the devices' pushes.
for repo in fleet reports; do git init -q --bare -b main "$W/git/$repo.git"; done
git -C "$W/git/fleet.git" config http.receivepack false && git -C "$W/git/reports.git" config http.receivepack true
node "$top/dist/dev/serve-git.js" "$W/git" --port "$PORT" >"$W/git-server.log" 2>&1 & pids+=($!)
until_ok 20 git ls-remote "http://127.0.0.1:$PORT/fleet.git"
git remote add origin "$W/git/fleet.git" && git push -q -u origin main
if git push -q "http://127.0.0.1:$PORT/fleet.git" main:refs/heads/from-a-device 2>/dev/null; then echo "the fleet repository took a push over HTTP" >&2; exit 1; fi
echo "a push to the fleet repository over HTTP, as a device would try it: refused"

echo "== three devices, each with its own name and labels"
for device in gw-1:role=gateway sensor-1:role=sensor,site=lab sensor-2:role=sensor; do
  name=${device%%:*} labels=()
  IFS=, read -ra kv <<<"${device#*:}"; for l in "${kv[@]}"; do labels+=(--label "$l"); done
  # node itself in the background (not the shell function), so that $! is the agent the EXIT trap stops.
  node "$top/bin/keystone.js" agent --repo "http://127.0.0.1:$PORT/fleet.git" --device "$name" "${labels[@]}" \
    --status-repo "http://127.0.0.1:$PORT/reports.git" --trusted-key "$W/release.pub" --require-ref --state-dir "$W/devices/$name" --listen none --poll 2s --stop-on-exit \
    >"$W/$name.log" 2>&1 & pids+=($!)
done

# Every device's report on a commit, in one fetch: 3 successes.
all_ok() { keystonectl fleet status --repo "http://127.0.0.1:$PORT/fleet.git" --reports "http://127.0.0.1:$PORT/reports.git" --json | node -e '
  const v = JSON.parse(require("fs").readFileSync(0, "utf8"));
  process.exit(v.targets.reduce((n, t) => n + t.success, 0) === 3 ? 0 : 1)'; }
until_ok 60 all_ok
keystonectl fleet status --repo "http://127.0.0.1:$PORT/fleet.git" --reports "http://127.0.0.1:$PORT/reports.git" --devices

echo "== a pull request: the heartbeat 1.1.0, its dry run for every target (reviewed unsigned: it is signed on merge)"
git checkout -qb heartbeat-1.1
sed -i 's/^version = "1.0.0"/version = "1.1.0"/' recipes/com.acme.heartbeat.toml
git commit -qam "heartbeat 1.1.0"
keystonectl apply-dry --fleet --base main --allow-unsigned --format markdown 2>/dev/null

echo "== merged, signed for main, pushed: all three apply it"
git checkout -q main && git merge -q --ff-only heartbeat-1.1
keystonectl sign --key "$W/release.key" --ref main >/dev/null && git commit -qam "sign heartbeat 1.1.0 for main" && git push -q origin main
until_ok 60 all_ok
keystonectl fleet status --repo "http://127.0.0.1:$PORT/fleet.git" --reports "http://127.0.0.1:$PORT/reports.git"
