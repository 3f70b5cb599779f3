#!/usr/bin/env bash
# Builds the example's web image, keystone-example/web:1.27.0, without a registry: a rootfs of the host's static
# busybox (Debian: busybox-static) and www/, imported with `docker import`. recipes/com.acme.web.toml runs it with
# pull_policy = "never".
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tag="${1:-keystone-example/web:1.27.0}"
busybox="$(command -v busybox || echo /bin/busybox)"
[ -x "$busybox" ] || { echo "no busybox: apt-get install busybox-static" >&2; exit 2; }
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/www"
cp "$busybox" "$root/bin/busybox"
for applet in sh httpd; do ln -s busybox "$root/bin/$applet"; done
cp -r "$here/www/." "$root/www/"
tar -C "$root" -c . | docker import --change 'CMD ["httpd", "-f", "-p", "18088", "-h", "/www"]' - "$tag" >/dev/null
echo "built $tag"
