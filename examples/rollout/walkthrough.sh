#!/usr/bin/env bash
# A staged rollout on one machine (docs/rollouts.md): six devices follow one signed repository over Git's
# smart HTTP, in three waves (examples/rollout/fleet.toml). A good commit walks the waves, canary → early → everyone,
# each a bake after the one before; a bad one (its health check never passes) fails on the canary and halts there,
# no other device applying it; its revert reaches every wave at once. `keystonectl fleet status` at each step.
# The devices report to a repository of their own (REPORTS), so that they need only read the fleet repository, and
# count only signatures made for main (`sign --ref main`, `--require-ref`): docs/security.md.
#   bash examples/rollout/walkthrough.sh [WORK_DIR]    (from the Keystone checkout, after `npm ci && npm run build`)
# Everything lives under WORK_DIR (default: a new temporary directory) and stops when the script ends.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
W=${1:-$(mktemp -d)} && mkdir -p "$W"
# The components run as nobody (no user in their recipes): they must be able to reach their work directories under W.
chmod 0755 "$W"
PORT=${KEYSTONE_WALKTHROUGH_PORT:-8419}
URL="http://127.0.0.1:$PORT/fleet.git"
REPORTS="http://127.0.0.1:$PORT/reports.git"
keystonectl() { node "$top/bin/keystonectl.js" "$@"; }
pids=()
# The agents run with --stop-on-exit: stopping them stops their components too.
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
export GIT_AUTHOR_NAME=${GIT_AUTHOR_NAME:-ops} GIT_AUTHOR_EMAIL=${GIT_AUTHOR_EMAIL:-ops@example.com}
export GIT_COMMITTER_NAME=${GIT_COMMITTER_NAME:-ops} GIT_COMMITTER_EMAIL=${GIT_COMMITTER_EMAIL:-ops@example.com}
# Waits up to $1 seconds for the command after it to succeed.
until_ok() { local n=$1; shift; for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done; "$@"; }
# The fleet view of the branch tip as JSON, tested by a JavaScript expression over it (`v`).
view_is() { keystonectl fleet status --repo "$URL" --reports "$REPORTS" --json | node -e '
  const v = JSON.parse(require("fs").readFileSync(0, "utf8"));
  const w = Object.fromEntries((v.rollout?.waves ?? []).map((x) => [x.name, x]));
  process.exit(eval(process.argv[1]) ? 0 : 1)' "$1"; }
status() { echo "-- $1"; keystonectl fleet status --repo "$URL" --reports "$REPORTS" | sed -n '/^rollout of/,$p'; }
release() { # $1: heartbeat version, $2: its health check, $3: message
  sed -i "s/^version = .*/version = \"$1\"/; s/^check = .*/check = \"$2\"/" recipes/com.acme.heartbeat.toml
  keystonectl sign --key "$W/release.key" --ref main >/dev/null && git commit -qam "$3" && git push -q origin main; }

echo "== the fleet repository: examples/fleet with [rollout] in fleet.toml, signed, served over smart HTTP"
keystonectl keygen --out "$W/release" --no-password >/dev/null
cp -r "$top/examples/fleet" "$W/fleet" && rm "$W/fleet/walkthrough.sh" && cp "$here/fleet.toml" "$W/fleet/fleet.toml"
cd "$W/fleet" && git init -q -b main && keystonectl sign --key "$W/release.key" --ref main >/dev/null
git add -A && git commit -qm "fleet v1, staged"
# Over HTTP the fleet repository is read-only (the devices' view of it); the operator pushes to it as a path.
for repo in fleet reports; do git init -q --bare -b main "$W/git/$repo.git"; done
git -C "$W/git/fleet.git" config http.receivepack false && git -C "$W/git/reports.git" config http.receivepack true
node "$top/dist/dev/serve-git.js" "$W/git" --port "$PORT" >"$W/git-server.log" 2>&1 & pids+=($!)
until_ok 20 git ls-remote "$URL"
git remote add origin "$W/git/fleet.git" && git push -q -u origin main

echo "== six devices: gw-1 the canary, two labelled ring=early, three for everyone"
for device in gw-1:role=gateway gw-2:role=gateway,ring=early sensor-1:role=sensor,ring=early \
              gw-3:role=gateway sensor-2:role=sensor sensor-3:role=sensor; do
  name=${device%%:*} labels=()
  IFS=, read -ra kv <<<"${device#*:}"; for l in "${kv[@]}"; do labels+=(--label "$l"); done
  # node itself in the background (not the shell function), so that $! is the agent the EXIT trap stops.
  node "$top/bin/keystone.js" agent --repo "$URL" --status-repo "$REPORTS" --device "$name" "${labels[@]}" \
    --trusted-key "$W/release.pub" --require-ref --state-dir "$W/devices/$name" --listen none --poll 2s --stop-on-exit \
    >"$W/$name.log" 2>&1 & pids+=($!)
done
until_ok 120 view_is 'w.everyone.success === 3'

echo "== a good commit (heartbeat 1.1.0): canary, then early, then everyone"
release 1.1.0 "cmd:test -s beat" "heartbeat 1.1.0"
until_ok 60 view_is 'w.canary.success === 1'
status "the canary applied it; early waits for its bake"
until_ok 60 view_is 'w.early.success === 2'
status "early applied it; everyone waits for early's bake"
until_ok 60 view_is 'w.everyone.success === 3'
status "everyone applied it"

echo "== a bad commit (heartbeat 1.2.0, whose health check looks for the wrong file): halted at the canary"
release 1.2.0 "cmd:test -s beat.missing" "heartbeat 1.2.0"
until_ok 90 view_is 'v.rollout.halted && w.early.held === 2 && w.everyone.held === 3'
status "halted: no device outside the canary applies it"

echo "== git revert: back to 1.1.0, a state every device ran well, so no wave waits"
git revert --no-edit HEAD >/dev/null && keystonectl sign --key "$W/release.key" --ref main >/dev/null && git commit -q --amend --no-edit -a && git push -q origin main
until_ok 60 view_is 'v.targets.reduce((n, t) => n + t.success, 0) === 6'
status "the revert, everywhere at once"
