#!/bin/bash
# images/bake-rootfs.sh ROOTFS: installs hearth-agent, its command links, hook launchers, systemd units and
# the hearth-agent element's files into an existing root filesystem directory, offline. It runs the
# element's own scripts (extra-data.d, install-static, install.d, post-install.d) from outside the rootfs,
# so a baked directory and a diskimage-builder image hold the same files.
#
# HEARTH_AGENT: the single executable to install (default dist/hearth-agent; npm run build:agent).
# Runs as root (the files must be root's). The rootfs needs no Node and no network.
set -eu
set -o pipefail

usage() {
    echo "usage: $0 ROOTFS   (HEARTH_AGENT=path/to/hearth-agent, default <repo>/dist/hearth-agent)" >&2
    exit 2
}
[ $# -eq 1 ] || usage
rootfs=$(cd "$1" 2>/dev/null && pwd) || { echo "bake-rootfs: $1 is not a directory" >&2; exit 2; }
[ -d "$rootfs/usr" ] && [ -d "$rootfs/etc" ] || { echo "bake-rootfs: $rootfs does not look like a root filesystem (no usr/ or etc/)" >&2; exit 2; }
[ "$rootfs" != / ] || { echo "bake-rootfs: refusing to bake the running system; use the element or cloud-init" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
agent=${HEARTH_AGENT:-$here/../dist/hearth-agent}
[ -x "$agent" ] || { echo "bake-rootfs: no hearth-agent at $agent; run npm run build:agent or set HEARTH_AGENT" >&2; exit 1; }
element=$here/elements/hearth-agent

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# extra-data.d: stage the executable and the units.
TMP_HOOKS_PATH=$stage DIB_HEARTH_AGENT=$agent DIB_HEARTH_UNITS=$here/systemd "$element/extra-data.d/10-hearth-agent"
# install-static: the element's static/ tree, modes kept, owned by whoever bakes (root).
cp -R --preserve=mode "$element/static/." "$rootfs/"
# install.d and post-install.d, pointed at the rootfs.
HEARTH_BAKE_ROOT=$rootfs HEARTH_STAGED=$stage/hearth-agent "$element/install.d/50-hearth-agent"
HEARTH_BAKE_ROOT=$rootfs "$element/post-install.d/50-hearth-agent-units"
install -D -m 0644 "$here/README.md" "$rootfs/usr/share/doc/hearth-agent/README.md"

echo "baked $("$rootfs/usr/bin/hearth-agent" --version | head -n 1) into $rootfs"
