# topo.sh — sourced by the demo and experiment scripts: N hosts in network
# namespaces, each wired by a veth to a switch port in the root namespace.
#
#   topo_up ID N SUBNET    host i: namespace ID-hi, eth0 SUBNET.i/24 (no default
#                          route); switch port IDpi; offloads off on both ends
#                          (AF_XDP copies frames raw, so checksums must be real)
#   topo_down ID N         kill what runs in the namespaces, delete them (and the veths)

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
