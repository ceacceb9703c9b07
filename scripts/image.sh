#!/usr/bin/env bash
# image.sh — build gswitch's container image from this checkout: static
# gswitchd, gswitchctl and gsperf (CGO_ENABLED=0) on an empty image (FROM
# scratch: no base image is downloaded), with podman, buildah or docker,
# whichever is installed (podman first; ENGINE=buildah to choose).
#
#   scripts/image.sh                     # builds gswitch:latest (IMAGE=name:tag for another)
#   scripts/image.sh -save gswitch.tar   # and writes it as an archive (to load on other machines)
#   scripts/image.sh -seccomp FILE       # and writes podman's seccomp profile with bpf() allowed to CAP_BPF
#   FORCE=1 scripts/image.sh             # rebuild even if the image is up to date
#
# The image carries a label with a hash of the files the binaries are built
# from (Go sources, go.mod, go.sum, embedded data, the Containerfile) and
# the Go version: when an image of that name has the same hash, nothing is
# built again. The Go modules must be in the module cache (go mod download,
# which scripts/install-deps.sh runs); nothing else is fetched.
#
# -seccomp: podman's default seccomp profile (containers-common's
# seccomp.json) lets a container call bpf() only when it holds
# CAP_SYS_ADMIN, although the kernel asks for CAP_BPF alone (5.8 and
# later). The profile written is that default with bpf() allowed to
# CAP_BPF too, nothing else changed, so that gswitchd runs without
# CAP_SYS_ADMIN (--security-opt seccomp=FILE). SECCOMP_BASE names another
# profile to start from.
# deploy/container/README.md has the run line and the capabilities it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
IMAGE=${IMAGE:-gswitch:latest}
save=""
seccomp=""
while (($#)); do
	case "$1" in
	-save) save=${2:?-save needs a file name}; shift 2 ;;
	-seccomp) seccomp=${2:?-seccomp needs a file name}; shift 2 ;;
	-h | -help | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "image.sh: unknown argument $1 (-save FILE, -seccomp FILE; IMAGE=name:tag, ENGINE=podman|buildah|docker, FORCE=1)" >&2; exit 2 ;;
	esac
done

engine=${ENGINE:-}
if [ -z "$engine" ]; then
	for e in podman buildah docker; do
		if command -v $e >/dev/null && { [ $e != docker ] || docker info >/dev/null 2>&1; }; then
			engine=$e
			break
		fi
	done
fi
if [ -z "$engine" ]; then
	echo "image.sh: no podman, buildah or docker engine here (on Debian: apt-get install podman)" >&2
	exit 1
fi

# The source hash: every file in the checkout the binaries could be built
# from (tests, documentation, scripts and topologies left out), with the
# Go version and the Containerfile.
source_hash() {
	{
		go version
		git ls-files -z -co --exclude-standard |
			grep -zv -e '_test\.go$' -e '\.md$' -e '^docs/' -e '^test/' -e '^topologies/' -e '^scripts/' \
				-e '^deploy/' -e '^tools/' -e '/testdata/' -e '^\.ci/' |
			sort -z | xargs -0 sha256sum
		sha256sum deploy/container/Containerfile
	} | sha256sum | cut -c1-32
}
key=$(source_hash)

inspect_label() {
	case "$engine" in
	buildah) buildah inspect --type image --format '{{index .ImageAnnotations "org.gswitch.source"}}{{index .OCIv1.Config.Labels "org.gswitch.source"}}' "$IMAGE" 2>/dev/null ;;
	*) $engine image inspect --format '{{index .Config.Labels "org.gswitch.source"}}' "$IMAGE" 2>/dev/null ;;
	esac
}
if [ "${FORCE:-0}" != 1 ] && [ "$(inspect_label || true)" = "$key" ]; then
	echo "image.sh: $IMAGE is up to date (source $key, $engine)"
else
	ctx=$(mktemp -d)
	trap 'rm -rf "$ctx"' EXIT
	echo "image.sh: building static gswitchd, gswitchctl, gsperf"
	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$ctx/" ./cmd/gswitchd ./cmd/gswitchctl ./cmd/gsperf
	for b in gswitchd gswitchctl gsperf; do
		# A dynamically linked binary names its loader in its first page;
		# on an empty image it would not start.
		if head -c 4096 "$ctx/$b" | grep -qa 'ld-linux'; then
			echo "image.sh: $b is not static (it names a dynamic loader): it cannot run FROM scratch" >&2
			exit 1
		fi
	done
	cp deploy/container/Containerfile "$ctx/"
	rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
	labels=(--label "org.gswitch.source=$key" --label "org.opencontainers.image.revision=$rev"
		--label "org.opencontainers.image.title=gswitch")
	echo "image.sh: building $IMAGE with $engine (FROM scratch)"
	case "$engine" in
	buildah) buildah bud --quiet "${labels[@]}" -t "$IMAGE" -f "$ctx/Containerfile" "$ctx" >/dev/null ;;
	*) $engine build --quiet "${labels[@]}" -t "$IMAGE" -f "$ctx/Containerfile" "$ctx" >/dev/null ;;
	esac
	echo "image.sh: built $IMAGE (source $key, revision $rev)"
fi
if [ -n "$seccomp" ]; then
	base=${SECCOMP_BASE:-}
	if [ -z "$base" ] && command -v podman >/dev/null; then
		base=$(podman info --format '{{.Host.Security.SECCOMPProfilePath}}' 2>/dev/null || true)
	fi
	base=${base:-/usr/share/containers/seccomp.json}
	[ -r "$base" ] || { echo "image.sh: no seccomp profile at $base to start from (SECCOMP_BASE=FILE)" >&2; exit 1; }
	python3 - "$base" "$seccomp" <<'PY'
import json, sys
src, dst = sys.argv[1], sys.argv[2]
with open(src) as f:
    prof = json.load(f)
rules = []
for r in prof.get("syscalls", []):
    excl = (r.get("excludes") or {}).get("caps") or []
    if "bpf" in r.get("names", []) and r.get("action") != "SCMP_ACT_ALLOW" and "CAP_SYS_ADMIN" in excl:
        # The rule refusing bpf() to containers without CAP_SYS_ADMIN: bpf()
        # gets a copy of its own that also spares containers with CAP_BPF.
        rest = dict(r, names=[n for n in r["names"] if n != "bpf"])
        if rest["names"]:
            rules.append(rest)
        rules.append(dict(r, names=["bpf"], excludes=dict(r.get("excludes") or {}, caps=excl + ["CAP_BPF"])))
        continue
    rules.append(r)
rules.append({"names": ["bpf"], "action": "SCMP_ACT_ALLOW", "args": [],
              "comment": "gswitch: bpf() with CAP_BPF, as the kernel itself asks (Linux 5.8 and later)",
              "includes": {"caps": ["CAP_BPF"]}, "excludes": {}})
prof["syscalls"] = rules
with open(dst, "w") as f:
    json.dump(prof, f, indent=1)
    f.write("\n")
PY
	echo "image.sh: wrote $seccomp: $base with bpf() allowed to CAP_BPF"
fi
if [ -n "$save" ]; then
	case "$engine" in
	buildah) buildah push "$IMAGE" "docker-archive:$save:$IMAGE" ;;
	*) $engine save -o "$save" "$IMAGE" ;;
	esac
	echo "image.sh: wrote $save ($engine load -i $save, or ctr -n k8s.io images import $save on a Kubernetes node)"
fi
profile=${seccomp:-seccomp.json}
cat <<EOF
run a switch whose ports are in network namespace SW (deploy/container/README.md):
  podman run -d --name SW --network ns:/run/netns/SW --cap-drop all \\
    --cap-add NET_ADMIN,NET_RAW,BPF,IPC_LOCK --security-opt seccomp=$profile \\
    -v /path/to/config-dir:/etc/gswitch:ro $IMAGE
EOF
if [ -z "$seccomp" ]; then
	echo "  ($profile: scripts/image.sh -seccomp $profile; or add SYS_ADMIN to --cap-add instead of the profile)"
fi
