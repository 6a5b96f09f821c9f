#!/usr/bin/env bash
# storm.sh: an upcall storm against govswitchd, run INSIDE the UML bed as
# root (bench/reliability/run starts it through scripts/kernel-test --exec).
#
#   BIN=DIR MODE=raw|tcp SECS=S SOCKETS=N bash storm.sh OUTDIR
#
# Topology: namespaces h1 (10.0.0.1) and h2 (10.0.0.2) on veth pairs whose
# host ends v1 and v2 are govswitchd's ports on datapath br0.
# Load: govswitchd runs with --disable-megaflows (the exact-match regime:
# every new 5-tuple misses the kernel), and for SECS seconds either
#   MODE=raw (default): rawstorm in h1 writes Ethernet/IPv4/UDP frames to
#     h2's MAC as fast as one core can, each of a new UDP port pair, so
#     each frame is an upcall: far more new flows per second than the
#     switch can set up, and the kernel must drop (count as lost) the rest;
#   MODE=tcp: `govbench rate` in h1 keeps SOCKETS connection attempts
#     outstanding to new ports of 10.0.0.2 (no listener: SYN and RST are
#     two new flows per attempt).
# Meanwhile two loops keep timing `ovs-appctl version` and `ovs-ofctl
# show` against the daemon (each as fast as it answers), and a third
# samples its VmRSS every 0.2 s; and bench/reliability/probe times the
# same two requests over the sockets directly every 50 ms (no process to
# start, so the daemon's own latency). Quiet figures come first (5 runs of
# each tool, 2 s of probe).
# It writes OUTDIR/storm.json (one JSON object with the figures),
# OUTDIR/appctl.ms, OUTDIR/ofctl.ms (one latency per line, ms),
# OUTDIR/rss.kb, OUTDIR/upcall.txt (upcall/show at the end) and
# OUTDIR/storm.log.
set -uo pipefail

out=${1:?usage: storm.sh OUTDIR}
BIN=${BIN:?BIN must name the folder with govswitchd and govbench}
SECS=${SECS:-10}
SOCKETS=${SOCKETS:-1000}
MODE=${MODE:-raw}
mkdir -p "$out"
log="$out/storm.log"
exec 3>>"$log"
# (The guest has no /dev/fd: no process substitution, no tee to fd 3.)
say() { printf '%s %s\n' "$(date +%T)" "$*"; printf '%s %s\n' "$(date +%T)" "$*" >&3; }

fail() {
	say "storm: $*"
	printf '{"status":"failed","why":"%s"}\n' "$*" >"$out/storm.json"
	exit 1
}

sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip netns add h1 && ip netns add h2 || fail "netns"
for n in h1 h2; do
	ip netns exec "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv4.ip_local_port_range="1024 65535" net.ipv4.tcp_tw_reuse=1
done
ip link add v1 type veth peer name e1 netns h1 &&
	ip link add v2 type veth peer name e2 netns h2 &&
	ip link set v1 up && ip link set v2 up &&
	ip -n h1 addr add 10.0.0.1/24 dev e1 && ip -n h1 link set e1 up && ip -n h1 link set lo up &&
	ip -n h2 addr add 10.0.0.2/24 dev e2 && ip -n h2 link set e2 up && ip -n h2 link set lo up || fail "veth"

dir=$(mktemp -d /run/storm.XXXXXX)
export OVS_RUNDIR=$dir
"$BIN/govswitchd" --datapath system --rundir "$dir" --bridge br0 --port v1 --port v2 \
	--disable-megaflows >"$dir/govswitchd.log" 2>&1 &
pid=$!
for ((i = 0; i < 100; i++)); do
	ovs-appctl version >/dev/null 2>&1 && ovs-ofctl show "unix:$dir/br0.mgmt" >/dev/null 2>&1 && break
	sleep 0.1
done
ovs-appctl version >/dev/null 2>&1 || fail "govswitchd did not start: $(tail -c 300 "$dir/govswitchd.log" | tr '\n"' ' _')"

dpstats() { # "missed lost flows" of the datapath ovs-system, which br0 is on
	ovs-dpctl show system@ovs-system 2>/dev/null | awk '
		/lookups:/ { for (i = 1; i <= NF; i++) { split($i, a, ":"); if (a[1] == "missed") m = a[2]; if (a[1] == "lost") l = a[2] } }
		/flows:/ { f = $2 }
		END { printf "%d %d %d\n", m, l, f }'
}
ms_of() { # runs a command, prints its wall time in ms (or -1 if it failed)
	local t0 t1
	t0=$(date +%s%N)
	if "$@" >/dev/null 2>&1; then
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000)) | awk '{printf "%.1f\n", $1 / 1000}'
	else
		echo -1
	fi
}
hwm() { awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0; }
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0; }

# Quiet baseline, then the storm.
ip netns exec h1 ping -c 2 -W 1 10.0.0.2 >&3 2>&1
base_rss=$(rss)
: >"$out/appctl.base.ms"
: >"$out/ofctl.base.ms"
for ((i = 0; i < 5; i++)); do
	ms_of ovs-appctl version >>"$out/appctl.base.ms"
	ms_of ovs-ofctl show "unix:$dir/br0.mgmt" >>"$out/ofctl.base.ms"
done
mkdir -p "$out/quiet"
"$BIN/probe" -rundir "$dir" -T 2 -o "$out/quiet" 2>&3
set -- $(dpstats)
m0=$1 l0=$2
: >"$out/appctl.ms"
: >"$out/ofctl.ms"
: >"$out/rss.kb"
h2mac=$(ip -n h2 link show e2 | awk '/link\/ether/ {print $2}')
if [[ $MODE == raw ]]; then
	ip netns exec h1 "$BIN/rawstorm" -i e1 -dst "$h2mac" -T "$SECS" >"$out/load.json" 2>&3 &
	load="rawstorm -T $SECS to $h2mac"
else
	ip netns exec h1 "$BIN/govbench" rate -r 10.0.0.2:1024-65535 -s "$SOCKETS" -T "$SECS" --json >"$out/load.json" 2>&3 &
	load="govbench rate -s $SOCKETS -T $SECS"
fi
gb=$!
"$BIN/probe" -rundir "$dir" -T "$SECS" -o "$out" 2>&3 &
pr=$!
say "storm: $load against govswitchd --disable-megaflows (pid $pid)"
(while kill -0 "$gb" 2>/dev/null; do ms_of ovs-appctl version >>"$out/appctl.ms"; done) &
s1=$!
(while kill -0 "$gb" 2>/dev/null; do ms_of ovs-ofctl show "unix:$dir/br0.mgmt" >>"$out/ofctl.ms"; done) &
s2=$!
while kill -0 "$gb" 2>/dev/null; do
	rss >>"$out/rss.kb"
	sleep 0.2
done
wait "$gb" "$s1" "$s2" "$pr"
set -- $(dpstats)
m1=$1 l1=$2 flows=$3
ovs-appctl upcall/show >"$out/upcall.txt" 2>&1
alive=false
kill -0 "$pid" 2>/dev/null && ovs-appctl version >/dev/null 2>&1 && alive=true
peak=$(hwm)
after_ping=$(ip netns exec h1 ping -c 3 -i 0.2 -W 1 10.0.0.2 2>&1 | awk -F', ' '/packet loss/ {print $3}')

stats() { # FILE -> "n p50 p99 max failed"
	sort -g "$1" | awk '$1 < 0 { f++; next } { v[++n] = $1 } END {
		if (n == 0) { printf "0 0 0 0 %d\n", f; exit }
		printf "%d %s %s %s %d\n", n, v[int((n - 1) * 0.50) + 1], v[int((n - 1) * 0.99) + 1], v[n], f }'
}
set -- $(stats "$out/appctl.base.ms")
base_appctl=$2
set -- $(stats "$out/ofctl.base.ms")
base_ofctl=$2
set -- $(stats "$out/appctl.ms")
an=$1 ap50=$2 ap99=$3 amax=$4 afail=$5
set -- $(stats "$out/ofctl.ms")
on=$1 op50=$2 op99=$3 omax=$4 ofail=$5
maxrss=$(sort -n "$out/rss.kb" | tail -1)
gbj=$(tail -1 "$out/load.json")
jnum() { v=$(printf '%s' "$2" | grep -o "\"$1\":[0-9.e+-]*" | head -1 | cut -d: -f2); echo "${v:-0}"; }
if [[ $MODE == raw ]]; then
	offered=$(jnum frames "$gbj") rate=$(jnum rate "$gbj")
else
	offered=$(jnum completed "$gbj") rate=$(jnum avg_per_s "$gbj")
fi
printf '{"status":"ok","mode":"%s","secs":%s,"offered":%s,"offered_per_s":%s,"upcalls":%d,"lost":%d,"flows_end":%d,' \
	"$MODE" "$SECS" "$offered" "$rate" $((m1 - m0)) $((l1 - l0)) "$flows" >"$out/storm.json"
printf '"rss_base_kb":%d,"rss_max_sampled_kb":%d,"hwm_kb":%d,' "$base_rss" "${maxrss:-0}" "$peak" >>"$out/storm.json"
printf '"appctl_base_ms":%s,"appctl_n":%d,"appctl_p50_ms":%s,"appctl_p99_ms":%s,"appctl_max_ms":%s,"appctl_failed":%d,' \
	"$base_appctl" "$an" "$ap50" "$ap99" "$amax" "$afail" >>"$out/storm.json"
printf '"ofctl_base_ms":%s,"ofctl_n":%d,"ofctl_p50_ms":%s,"ofctl_p99_ms":%s,"ofctl_max_ms":%s,"ofctl_failed":%d,' \
	"$base_ofctl" "$on" "$op50" "$op99" "$omax" "$ofail" >>"$out/storm.json"
for f in quiet/probe_appctl quiet/probe_ofctl probe_appctl probe_ofctl; do
	set -- $(stats "$out/$f.ms")
	printf '"%s":{"n":%d,"p50_ms":%s,"p99_ms":%s,"max_ms":%s,"failed":%d},' "${f/\//_}" "$1" "$2" "$3" "$4" "$5" >>"$out/storm.json"
done
printf '"alive_after":%s,"ping_after":"%s"}\n' "$alive" "${after_ping:-none}" >>"$out/storm.json"
cat "$out/storm.json"

kill -TERM "$pid" 2>/dev/null
for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
cp "$dir/govswitchd.log" "$out/" 2>/dev/null
ovs-dpctl del-dp system@ovs-system >/dev/null 2>&1
ip netns del h1
ip netns del h2
exit 0
