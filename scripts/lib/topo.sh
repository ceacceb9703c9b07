# topo.sh — sourced by the demo and experiment scripts: N hosts in network
# namespaces, each wired by a veth to a switch port in the root namespace.
#
#   topo_up ID N SUBNET    host i: namespace ID-hi, eth0 SUBNET.i/24 (no default
#                          route); switch port IDpi; offloads off on both ends
#                          (AF_XDP copies frames raw, so checksums must be real)
#   topo_down ID N         kill what runs in the namespaces, delete them (and the veths)
#
# For the experiment scripts (run from the repository root):
#
#   exp_begin ID N SUBNET  refuse to run unless root; build gswitchd and gsperf
#                          into $WORK; topo_up; on exit, stop the switch, tear
#                          the hosts down and remove $WORK
#   switch_start LOG       run $WORK/gswitchd on $WORK/gswitchd.yaml (PID in $PID)
#   switch_stop            stop it, if running
#   policy_keys NAME       the port keys (flow-style YAML) of a queueing policy by
#                          name: a scheduler (fifo, drr, sfq, prio), or a mechanism
#                          with the scheduler it runs on (afq: rsp + afq;
#                          pfabric: pfabric + pfabric ranks from the gsperf header)

policy_keys() {
	case $1 in
	afq) echo "scheduler: rsp, mechanisms: {afq: {}}" ;;
	pfabric) echo "scheduler: pfabric, mechanisms: {pfabric: {rank: gsperf}}" ;;
	pfabric-las) echo "scheduler: pfabric, mechanisms: {pfabric: {rank: las}}" ;;
	*) echo "scheduler: $1" ;;
	esac
}

topo_up() {
	local id=$1 n=$2 subnet=$3 i
	for i in $(seq 1 "$n"); do
		ip netns add "$id-h$i"
		ip link add "${id}p$i" type veth peer name eth0 netns "$id-h$i"
		ip -n "$id-h$i" link set lo up
		ip -n "$id-h$i" addr add "$subnet.$i/24" dev eth0
		ip -n "$id-h$i" link set eth0 up
		ip link set "${id}p$i" up
		ip netns exec "$id-h$i" ethtool -K eth0 tx off tso off gso off gro off >/dev/null
		ethtool -K "${id}p$i" tx off tso off gso off gro off >/dev/null
	done
}

topo_down() {
	local id=$1 n=$2 i p
	for i in $(seq 1 "$n"); do
		for p in $(ip netns pids "$id-h$i" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
		ip netns del "$id-h$i" 2>/dev/null || true
		ip link del "${id}p$i" 2>/dev/null || true
	done
}

exp_begin() {
	[ "$(id -u)" = 0 ] || { echo "$0: run as root (namespaces, veths, XDP)" >&2; exit 1; }
	EXP_ID=$1 EXP_N=$2 PID=
	WORK=$(mktemp -d)
	trap exp_end EXIT
	go build -o "$WORK/gswitchd" ./cmd/gswitchd
	go build -o "$WORK/gsperf" ./cmd/gsperf
	topo_up "$1" "$2" "$3"
}

exp_end() {
	switch_stop
	topo_down "$EXP_ID" "$EXP_N"
	rm -rf "$WORK"
}

switch_start() {
	"$WORK/gswitchd" -config "$WORK/gswitchd.yaml" >"$1" 2>&1 &
	PID=$!
	sleep 1
}

switch_stop() {
	if [ -n "${PID:-}" ]; then
		kill "$PID" 2>/dev/null || true
		wait "$PID" 2>/dev/null || true
		PID=
	fi
}
