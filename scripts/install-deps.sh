#!/usr/bin/env bash
# install-deps.sh — install what a fresh Debian machine lacks to build,
# demo and test gswitch (as root). Go itself must be on PATH (1.22 or newer
# fetches the toolchain go.mod asks for through the module proxy).
set -euo pipefail
need=()
command -v ip >/dev/null || need+=(iproute2)
command -v ethtool >/dev/null || need+=(ethtool)
command -v iperf3 >/dev/null || need+=(iperf3)
command -v ping >/dev/null || need+=(iputils-ping)
command -v curl >/dev/null || need+=(curl)
command -v python3 >/dev/null || need+=(python3)
command -v timeout >/dev/null || need+=(coreutils)
command -v tshark >/dev/null || need+=(tshark)                           # tests of the Wireshark dissector and of captures
command -v prometheus >/dev/null || need+=(prometheus)                   # the Prometheus test (promtool comes with it)
command -v podman >/dev/null || need+=(podman)                           # the container image: scripts/image.sh and its namespace test
command -v runc >/dev/null || need+=(runc)                               # the image test's runtime (crun refuses hybrid cgroup hierarchies)
if ((${#need[@]})); then
	echo "install-deps: apt-get install ${need[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if ! command -v go >/dev/null; then
	if [ -x /usr/local/go/bin/go ]; then
		echo "install-deps: Go is in /usr/local/go/bin: add it to PATH" >&2
	else
		echo "install-deps: Go is not installed (https://go.dev/doc/install)" >&2
	fi
	exit 1
fi
go mod download
