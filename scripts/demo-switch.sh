#!/usr/bin/env bash
# demo-switch.sh — one switch: build gswitchd, wire three hosts in network
# namespaces to it over veths, push iperf3 traffic through it, print what
# happened (throughput and metrics), and clean up. Run as root.
#
#   h1 (10.201.0.1) --- p1 \
#   h2 (10.201.0.2) --- p2 -- gswitchd     p3 egress shaped to 200 Mbit/s
#   h3 (10.201.0.3) --- p3 /
#
# SCHED=fifo scripts/demo-switch.sh runs p3 with a FIFO instead of DRR, to compare.
set -euo pipefail
. "$(dirname "$0")/lib/topo.sh"
SCHED=${SCHED:-drr}
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
[ "$(id -u)" = 0 ] || { echo "demo-switch.sh: run as root (namespaces, veths, XDP)" >&2; exit 1; }
for t in ip ethtool iperf3 ping curl; do
	command -v $t >/dev/null || { echo "demo-switch.sh: $t missing: run scripts/install-deps.sh" >&2; exit 1; }
done

ID=$(topo_id gd)
WORK=$(mktemp -d)
METRICS=127.0.0.1:${DEMO_METRICS_PORT:-9464}
PID=
cleanup() {
	if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
		kill -TERM "$PID"
		wait "$PID" 2>/dev/null || true
	fi
	topo_down $ID 3
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== building gswitchd and gswitchctl"
go build -o "$WORK/gswitchd" ./cmd/gswitchd
go build -o "$WORK/gswitchctl" ./cmd/gswitchctl

echo "== three hosts in namespaces, offloads off (AF_XDP copies frames raw): gswitchctl topo up -no-switches"
topo_up $ID 3 10.201.0

cat >"$WORK/gswitchd.yaml" <<YAML
ports:
  - {name: p1, interface: $(topo_port $ID 1)}
  - {name: p2, interface: $(topo_port $ID 2)}
  - {name: p3, interface: $(topo_port $ID 3), rate: 200Mbit, buffer: 512KiB, scheduler: $SCHED, queues: 8}
metrics: $METRICS
YAML
echo "== starting gswitchd"
"$WORK/gswitchd" -config "$WORK/gswitchd.yaml" >"$WORK/gswitchd.log" 2>&1 &
PID=$!
for _ in $(seq 50); do curl -sf "http://$METRICS/metrics" >/dev/null && break; sleep 0.1; done
sed 's/^/   /' "$WORK/gswitchd.log"

hx() { local h=$1; shift; ip netns exec $ID-h$h "$@"; }
gbit() { python3 -c 'import json,sys; d=json.load(sys.stdin)["end"]; s=d.get("sum_received") or d["sum"]; print("%.2f Gbit/s (%d retransmits)" % (s["bits_per_second"]/1e9, d.get("sum_sent",{}).get("retransmits",0)))'; }
mbit() { python3 -c 'import json,sys; print("%.1f Mbit/s" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e6))'; }

echo "== ping h1 -> h2 (the switch learns both addresses)"
hx 1 ping -c 3 -i 0.2 -W 2 10.201.0.2 | tail -2 | sed 's/^/   /'
for i in 2 3; do hx $i iperf3 -s -D -B 10.201.0.$i; done
sleep 0.3

echo "== iperf3 TCP h1 -> h2, 5 s, unshaped ports"
echo "   $(hx 1 timeout 30 iperf3 -c 10.201.0.2 -t 5 -J | gbit)"

echo "== iperf3 TCP h1 -> h3 (DSCP 8) and h2 -> h3 (DSCP 16) at once, 8 s, p3 shaped to 200 Mbit/s, scheduler $SCHED"
hx 3 iperf3 -s -D -B 10.201.0.3 -p 5202
sleep 0.2
hx 1 timeout 30 iperf3 -c 10.201.0.3 -t 8 -J -S 32 >"$WORK/a.json" &
A=$!
hx 2 timeout 30 iperf3 -c 10.201.0.3 -p 5202 -t 8 -J -S 64 >"$WORK/b.json" &
B=$!
sleep 4
echo "   queues of p3 in the middle of the run (non-empty ones):"
curl -s "http://$METRICS/metrics" | grep -E '^gswitch_queue_depth_(bytes|packets)\{port="p3"' | grep -v ' 0$' | sed 's/^/     /'
wait $A $B
echo "   h1 -> h3: $(mbit <"$WORK/a.json")"
echo "   h2 -> h3: $(mbit <"$WORK/b.json")"

echo "== metrics (http://$METRICS/metrics)"
curl -s "http://$METRICS/metrics" | grep -E '^gswitch_(port_(rx|tx)_packets_total|port_flooded_total|drops_total|umem_frames|mac_table_entries|buffer_)' | grep -v 'drops_total.* 0$' | sed 's/^/   /'
echo "== stopping gswitchd (SIGTERM detaches the XDP programs)"
kill -TERM $PID
wait $PID || true
PID=
tail -1 "$WORK/gswitchd.log" | sed 's/^/   /'
