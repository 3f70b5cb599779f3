#!/bin/sh
# Podman for the container suites (issue 33, docs/containers.md "Podman"): rootful Podman with runc, the cgroupfs
# manager and no default ulimits (the only configuration under which it starts containers on these machines), its
# Docker-compatible API served on /run/podman/podman.sock by `podman system service`, started in the background
# (catatonit is the init of the agent's containers).
# Waits until the socket answers a ping (deadline: PODMAN_SETUP_TIMEOUT seconds, default 60); exit 1 if it does not.
#
#   .ci/podman-setup.sh
#   KEYSTONE_TEST_ENGINE=podman npx vitest run test/e2e/containers-podman.e2e.test.ts …
#
# Idempotent: a socket that already answers is left as it is. The service's log: /tmp/podman-service.log.
set -eu

SOCKET=${PODMAN_SOCKET:-/run/podman/podman.sock}
TIMEOUT=${PODMAN_SETUP_TIMEOUT:-60}

if [ "$(id -u)" != 0 ]; then
  echo "podman-setup: run as root (rootful Podman: the agent's containers are root's)" >&2
  exit 1
fi

answers() {
  [ -S "$SOCKET" ] && curl -fsS --max-time 2 --unix-socket "$SOCKET" http://d/_ping >/dev/null 2>&1
}

# catatonit: the init Podman runs as PID 1 of a container created with Init (the agent's containers all are); without
# it Podman refuses to start them ("container-init binary not found on the host").
if ! command -v podman >/dev/null 2>&1 || ! command -v catatonit >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq podman runc catatonit curl >/dev/null
fi

mkdir -p /etc/containers
cat > /etc/containers/containers.conf <<'EOF'
[containers]
default_ulimits = []
[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
EOF

if answers; then
  echo "podman-setup: $SOCKET answers already ($(podman --version))"
  exit 0
fi

mkdir -p "$(dirname "$SOCKET")"
rm -f "$SOCKET"
# setsid: the service outlives this script and the CI step's process group. From /: every conmon it starts inherits
# its working directory, and one in a checkout deleted later fails each container start ("Failed to get working
# directory", the engine's "exit status 1").
(cd / && setsid podman system service --time=0 "unix://$SOCKET" </dev/null >/tmp/podman-service.log 2>&1 &)

deadline=$(( $(date +%s) + TIMEOUT ))
until answers; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "podman-setup: $SOCKET did not answer within ${TIMEOUT}s; the service said:" >&2
    tail -n 20 /tmp/podman-service.log >&2 || true
    exit 1
  fi
  sleep 0.2
done
echo "podman-setup: $SOCKET answers ($(podman --version))"
