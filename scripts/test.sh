#!/usr/bin/env bash
# test.sh — every test of gswitch: vet, unit tests with the race detector,
# short runs of every fuzz target (parsers, codecs, schedulers, route
# lookup), and the namespace integration tests with real gswitchd processes
# (root; they skip with the reason otherwise). About 15 minutes on a 2-core
# machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
[ "$(id -u)" = 0 ] || echo "test.sh: not root: the namespace tests in test/netns and the root tests of bpf, afxdp, topo and wire will skip" >&2
FUZZTIME=${FUZZTIME:-10s}
set -x
go vet ./...
# Unit tests, with the race detector, of everything but the namespace tests.
go test -count=1 -race $(go list ./... | grep -v /test/netns)
# Every fuzz target for a short while: the parsers of what arrives on the wire, the codecs, the schedulers.
# fuzz TARGET PKG: a short fuzz run. With a duration -fuzztime, Go's fuzz
# coordinator can fail a run that found nothing with a bare "context
# deadline exceeded" when its workers miss the deadline on a loaded machine
# (a race in the coordinator; no failing input is written). Such a run
# counts as passed once the target's seed corpus and testdata replay clean;
# a written failing input, a panic or any other error fails.
fuzz() {
	{ set +x; } 2>/dev/null
	echo "+ fuzz $1 $2 (-fuzztime $FUZZTIME)"
	local out rc=0
	out=$(go test -count=1 -run '^$' -fuzz "^$1\$" -fuzztime "$FUZZTIME" "$2" 2>&1) || rc=$?
	if [ "$rc" = 0 ]; then
		echo "$out" | tail -n 2
		set -x
		return 0
	fi
	if grep -q 'context deadline exceeded' <<<"$out" && ! grep -q -e 'Failing input written' -e 'panic:' <<<"$out"; then
		echo "$out" | grep -v -e '^--- FAIL' -e '^FAIL' -e '^exit status' -e 'context deadline exceeded' | tail -n 3
		echo "fuzz $1: Go's fuzz coordinator stopped on its -fuzztime deadline with no failing input (its deadline race); replaying the corpus"
		set -x
		go test -count=1 -run "^$1\$" "$2"
		return
	fi
	echo "$out"
	set -x
	return 1
}
fuzz FuzzParse ./pkt
fuzz FuzzSchedulersAgainstReference ./sched
fuzz FuzzHeader ./perf/proto
for f in FuzzGCHeader FuzzBFC FuzzBTS FuzzCredit FuzzTag; do fuzz $f ./wire; done
for f in FuzzParseLinkXDP FuzzParseReply; do fuzz $f ./bpf; done
for d in $(go list ./... | grep -v /test/netns); do
	# Fuzz targets added to other packages are run too.
	for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' $(go list -f '{{range .TestGoFiles}}{{$.Dir}}/{{.}} {{end}}{{range .XTestGoFiles}}{{$.Dir}}/{{.}} {{end}}' "$d") 2>/dev/null | sed 's/^func //'); do
		case "$d:$f" in
		*/pkt:FuzzParse | */sched:FuzzSchedulersAgainstReference | */perf/proto:FuzzHeader | */wire:* | */bpf:*) ;;
		*) fuzz "$f" "$d" ;;
		esac
	done
done
# The namespace tests print what they measured (-v); they run one at a time.
go test -count=1 -timeout 40m -v ./test/netns/
