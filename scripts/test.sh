#!/usr/bin/env bash
# test.sh — every test of gswitch: vet, unit tests (with the race detector
# where goroutines share state), a short fuzz run of the parser, and the
# namespace integration tests with real gswitchd processes (root; they skip
# with the reason otherwise). About 2 minutes on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
[ "$(id -u)" = 0 ] || echo "test.sh: not root: the namespace tests in test/netns will skip" >&2
set -x
go vet ./...
go test -count=1 -race ./dataplane/... ./queues/... ./sched/... ./config/...
go test -count=1 -run '^$' -fuzz FuzzParse -fuzztime 10s ./dataplane/pkt
go test -count=1 -run '^$' -fuzz FuzzSchedulersAgainstReference -fuzztime 10s ./sched
go test -count=1 -run '^$' -fuzz FuzzHeader -fuzztime 5s ./perf/proto
go test -count=1 $(go list ./... | grep -v /test/netns)
# The namespace tests print what they measured (-v); they run one at a time.
go test -count=1 -v ./test/netns/
