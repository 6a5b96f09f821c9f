#!/usr/bin/env bash
# latency.sh: what --scheduling batch costs in first-packet latency, run
# INSIDE the UML bed (like bed.sh, whose topology and switch functions it
# reuses):
#
#   BIN=DIR [SWITCHES="ovs govn gov"] [PROBES=300] bash latency.sh OUTDIR
#
# For each switch, in the exact-match regime (every new 5-tuple misses):
#   idle:   `govbench latency -s 1 -b PROBES` from h1 to h2 — one connection
#           attempt at a time, each a new flow, nothing else running;
#   loaded: the same probes while `govbench rate` (bed.sh's load, no rate
#           limit) keeps the bed's one CPU busy with a storm of new flows.
# Each probe's time is SYN sent to RST received, in whole milliseconds as
# ovs-benchmark reports it; the probe's SYN and the RST both miss and go
# through the switch's upcall path. One JSON line per measurement goes to
# OUTDIR/latency.jsonl.
set -uo pipefail
out=${1:?usage: latency.sh OUTDIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SWITCHES=${SWITCHES:-ovs govn gov}
PROBES=${PROBES:-300}
BED_LIB=1
# shellcheck source=bed.sh
source "$here/bed.sh" "$out"
topology || { say "topology failed"; exit 1; }
while awk '{exit !($1 < 11)}' /proc/uptime; do sleep 0.2; done
res="$out/latency.jsonl"
: >"$res"

# probe SWITCH MODE: one latency measurement, appended to $res.
probe() {
	local sw=$1 mode=$2 line
	line=$(ip netns exec h1 "$BIN/govbench" latency -r 10.0.0.2:20000-60000 -s 1 -b "$PROBES" 2>>"$log" |
		tee -a "$log" | tail -1)
	# "min A ms, max B ms, avg C ms"
	local mn mx av
	read -r mn mx av <<<"$(sed -n 's/min \([0-9]*\) ms, max \([0-9]*\) ms, avg \([0-9]*\) ms/\1 \2 \3/p' <<<"$line")"
	printf '{"switch":"%s","mode":"%s","probes":%d,"min_ms":%s,"max_ms":%s,"avg_ms":%s}\n' \
		"$sw" "$mode" "$PROBES" "${mn:-null}" "${mx:-null}" "${av:-null}" >>"$res"
	say "  $sw $mode: $line"
}

for sw in $SWITCHES; do
	say "latency: $sw"
	start_switch "$sw" exact || { say "  $why"; stop_switch "$sw"; continue; }
	quiet ip netns exec h1 "$BIN/govbench" rate -r "$remote" -T 1
	probe "$sw" idle
	ip netns exec h1 "$BIN/govbench" rate -r "$remote" -T 600 >&3 2>&1 &
	load=$!
	sleep 1
	probe "$sw" loaded
	kill "$load" 2>/dev/null
	wait "$load" 2>/dev/null
	stop_switch "$sw"
done
say "done: $res"
