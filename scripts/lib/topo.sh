# topo.sh — sourced by the demo and experiment scripts: N hosts in network
# namespaces, each wired by a veth to a switch port in the root namespace.
# The hosts are an l2 star topology brought up by `gswitchctl topo up
# -no-switches` (package topo, the code the namespace tests and fabrics use);
# the scripts run their own gswitchd on the ports.
#
#   topo_id PREFIX         a topology name: PREFIX (1-2 characters a-z0-9) and 4
#                          random hex digits (names are 1-6 characters)
#   topo_up ID N SUBNET    topology ID: host i in namespace ID-hi, eth0 SUBNET.i/24
#                          (no default route, offloads and IPv6 off); its switch
#                          port is the root-namespace interface $(topo_port ID i)
#   topo_port ID I         the switch-side interface of host I
#   topo_down ID N         kill what runs in the namespaces, delete them and the veths
#
# topo_up and topo_down run $GSWITCHCTL (default $WORK/gswitchctl; exp_begin
# builds it).
#
# For the experiment scripts (run from the repository root):
#
#   exp_begin ID N SUBNET  refuse to run unless root; build gswitchd, gsperf and
#                          gswitchctl into $WORK; topo_up; on exit, stop the
#                          switch, tear the hosts down and remove $WORK
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

topo_id() {
	echo "$1$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')"
}

topo_port() {
	echo "$1-1p$2"
}

# topo_yaml ID N SUBNET: the star topology (docs/topology.md).
topo_yaml() {
	local id=$1 n=$2 subnet=$3 i
	echo "name: $id"
	echo "mode: l2"
	echo "switches: {sw: {}}"
	echo "hosts:"
	for i in $(seq 1 "$n"); do echo "  h$i: {addr: $subnet.$i/24}"; done
	echo "links:"
	for i in $(seq 1 "$n"); do echo "  - {a: h$i, b: sw}"; done
}

topo_up() {
	local f
	f=$(mktemp --suffix=.yaml)
	topo_yaml "$1" "$2" "$3" >"$f"
	"${GSWITCHCTL:-$WORK/gswitchctl}" topo up -no-switches "$f" >/dev/null || { rm -f "$f"; return 1; }
	rm -f "$f"
}

topo_down() {
	local f
	f=$(mktemp --suffix=.yaml)
	# Down finds everything by the names the file implies; the subnet does not matter.
	topo_yaml "$1" "$2" 10.0.0 >"$f"
	"${GSWITCHCTL:-$WORK/gswitchctl}" topo down "$f" >/dev/null || true
	rm -f "$f"
}

exp_begin() {
	[ "$(id -u)" = 0 ] || { echo "$0: run as root (namespaces, veths, XDP)" >&2; exit 1; }
	EXP_ID=$1 EXP_N=$2 PID=
	WORK=$(mktemp -d)
	trap exp_end EXIT
	go build -o "$WORK/gswitchd" ./cmd/gswitchd
	go build -o "$WORK/gsperf" ./cmd/gsperf
	go build -o "$WORK/gswitchctl" ./cmd/gswitchctl
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
