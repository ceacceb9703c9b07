# env.sh — sourced by the benchmark and experiment scripts.
#
#   env_header SETTINGS...   print the run's environment for OUT/env.txt:
#                            date, kernel and CPU, commit (marked when the tree
#                            has uncommitted changes), the settings given, and
#                            the load average before the run
env_header() {
	echo "date: $(date -Is)"
	echo "kernel: $(uname -r); cpus: $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- 2>/dev/null || echo ' (with uncommitted changes)')"
	local s
	for s in "$@"; do echo "$s"; done
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
}
