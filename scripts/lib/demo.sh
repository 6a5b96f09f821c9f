#!/usr/bin/env bash
# demo.sh: runs inside the bed (or on a host with the openvswitch module), as
# root. Two hosts in network namespaces, h1 (10.0.0.1) and h2 (10.0.0.2),
# joined by govswitchd's bridge br0; shows traffic flowing and the datapath
# flows the switch set up, through the real OVS tools.
# Usage: demo.sh GOVSWITCHD_BINARY GOVBENCH_BINARY
set -euo pipefail
gsd=$1 bench=$2
run=/run/govswitch-demo
mkdir -p "$run"
say() { printf '\n### %s\n' "$*"; }
cleanup() {
	[[ -n "${pid:-}" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	ovs-dpctl del-dp system@ovs-system 2>/dev/null || true
	ip netns del h1 2>/dev/null || true
	ip netns del h2 2>/dev/null || true
}
trap cleanup EXIT

say "two hosts in namespaces, each on a veth pair"
for i in 1 2; do
	ip netns add h$i
	ip link add v$i type veth peer name eth0 netns h$i
	ip link set v$i up
	ip -n h$i addr add 10.0.0.$i/24 dev eth0
	ip -n h$i link set eth0 up
	ip -n h$i link set lo up
done

say "govswitchd --bridge br0 --port v1 --port v2"
"$gsd" --bridge br0 --port v1 --port v2 --rundir "$run" --handlers 1 >"$run/govswitchd.log" 2>&1 &
pid=$!
for _ in $(seq 50); do ovs-dpctl show system@ovs-system 2>/dev/null | grep -q "port 3" && break; sleep 0.1; done
ip link set br0 up

say "h1 pings h2 through the switch"
ip netns exec h1 ping -c 3 -i 0.2 10.0.0.2

say "TCP: 2 seconds of connection attempts from h1 to a listener in h2 (govbench, ovs-benchmark compatible)"
ip netns exec h2 "$bench" -l 10.0.0.2:7000-7009 listen &
lpid=$!
sleep 0.3
ip netns exec h1 "$bench" -r 10.0.0.2:7000-7009 -s 20 -T 2 rate
kill $lpid; wait $lpid 2>/dev/null || true

export OVS_RUNDIR=$run
say "ovs-dpctl show (the kernel datapath, read by the real OVS tool)"
ovs-dpctl show system@ovs-system
say "ovs-dpctl dump-flows: the megaflows govswitchd installed (NORMAL: L2 only, so new TCP connections hit the cache)"
ovs-dpctl dump-flows system@ovs-system
say "ovs-appctl upcall/show and fdb/show (plain ovs-appctl finds govswitchd)"
ovs-appctl upcall/show
ovs-appctl fdb/show br0
say "govswitchd log"
cat "$run/govswitchd.log"
