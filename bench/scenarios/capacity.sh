#!/usr/bin/env bash
# capacity.sh: the capacity scenario (issue 19, item 2), run INSIDE the bed
# (bench/scenarios/capacity starts it through scripts/kernel-test --exec).
# It reuses bed.sh's topology and switch functions:
#
#   BIN=DIR [SWITCHES="ovs gov govg"] [SECS=3] [START=250] [FACTOR=1.5] [MAXRATE=200000] bash capacity.sh OUTDIR
#
# For each switch, in the exact-match regime (megaflows off, so every new
# 5-tuple misses; NORMAL forwarding), each step starts a fresh switch and
# datapath, offers raw UDP frames from h1 at a fixed rate for SECS seconds
# (bench/rawload send: every frame a new 5-tuple, addressed to a MAC nobody
# owns so h2's stack never answers), and counts at h2 what arrived
# (rawload recv) and in the datapath what was missed and lost. A step
# passes when the kernel lost no upcall and every frame arrived. The rate
# starts at START and grows by FACTOR until a step fails, then two
# bisections between the last pass and the first failure. One JSON line per
# step goes to OUTDIR/capacity.jsonl.
set -uo pipefail
out=${1:?usage: capacity.sh OUTDIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SWITCHES=${SWITCHES:-ovs gov govg}
SECS=${SECS:-3}
START=${START:-250}
FACTOR=${FACTOR:-1.5}
MAXRATE=${MAXRATE:-200000}
BED_LIB=1
# shellcheck source=bed.sh
source "$here/bed.sh" "$out"
topology || { say "topology failed"; exit 1; }
# ovs-vswitchd 3.1 started before 10 s of uptime gets no handler threads.
while awk '{exit !($1 < 11)}' /proc/uptime; do sleep 0.2; done
res="$out/capacity.jsonl"
: >"$res"
{
	printf 'kernel=%s\ncpus=%s\n' "$(uname -r)" "$(nproc)"
	printf 'ovs=%s\n' "$(ovs-vswitchd --version | head -1)"
	printf 'govswitchd=%s\n' "$("$BIN/govswitchd" --version)"
	printf 'secs=%s\nstart=%s\nfactor=%s\n' "$SECS" "$START" "$FACTOR"
} >"$out/guest.txt"

# rxpk NS DEV prints DEV's received packets in namespace NS (/proc/net/dev
# is per namespace): it tells frames the switch never delivered from frames
# the receiver failed to read.
rxpk() { ip netns exec "$1" awk -v d="$2:" '$1 == d {print $3}' /proc/net/dev; }

# step SWITCH RATE: one fixed-rate run; sets verdict (pass, fail or error)
# and appends its JSON line.
step() {
	local sw=$1 rate=$2
	if ! start_switch "$sw" exact; then
		say "  $sw at $rate/s: $why"
		stop_switch "$sw"
		verdict=error
		return
	fi
	# Warm-up: ARP is not needed (static MACs), but let the switch's
	# threads settle and learn h1's MAC with a few frames.
	quiet ip netns exec h1 "$BIN/rawload" send -i e1 -rate 50 -T 0.5
	sleep 0.5
	local c0 c1 s0 s1 x0 x1 m0 l0 m1 l1 f1 snd rcv rpid
	rm -f "$work/recv.ready"
	ip netns exec h2 "$BIN/rawload" recv -i e2 -T 600 -ready "$work/recv.ready" >"$work/recv.json" 2>>"$log" &
	rpid=$!
	local i prev
	for ((i = 0; i < 200; i++)); do [[ -e $work/recv.ready ]] && break; sleep 0.05; done
	c0=$(cpu_ticks "$pid")
	s0=$(dpstats)
	x0=$(rxpk h2 e2)
	snd=$(ip netns exec h1 "$BIN/rawload" send -i e1 -rate "$rate" -T "$SECS" 2>>"$log")
	# Drain: a saturated switch delivers for a while after the sender
	# stops. Wait until e2 has received nothing new for a second (at most
	# 30 s), then read the counters and stop the receiver.
	prev=-1
	for ((i = 0; i < 30; i++)); do
		sleep 1
		x1=$(rxpk h2 e2)
		[[ $x1 == "$prev" ]] && break
		prev=$x1
	done
	c1=$(cpu_ticks "$pid")
	s1=$(dpstats)
	kill -INT "$rpid" 2>/dev/null
	wait "$rpid"
	rcv=$(cat "$work/recv.json")
	printf 'send: %s\nrecv: %s\n' "$snd" "$rcv" >&3
	read -r m0 l0 _ <<<"$s0"
	read -r m1 l1 f1 _ <<<"$s1"
	local sent received upcalls lost cpu
	sent=$(jnum sent "$snd")
	received=$(jnum distinct "$rcv")
	upcalls=$((m1 - m0))
	lost=$((l1 - l0))
	cpu=$(awk -v a="$c0" -v b="$c1" -v t="$tck" 'BEGIN {printf "%.2f", (b - a) / t}')
	verdict=fail
	((lost == 0 && sent > 0 && received >= sent)) && verdict=pass
	printf '{"switch":"%s","asked_rate":%s,"rate":%s,"sent":%s,"received":%s,"e2_rx":%d,"recv_socket_drops":%s,"upcalls":%d,"lost":%d,"flows_end":%d,"cpu_s":%s,"cpu_us_per_upcall":%s,"lat_us_p50":%s,"lat_us_p90":%s,"lat_us_p99":%s,"lat_us_max":%s,"verdict":"%s"}\n' \
		"$sw" "$rate" "$(jnum rate "$snd")" "$sent" "$received" $((x1 - x0)) "$(jnum socket_drops "$rcv")" "$upcalls" "$lost" "${f1:-0}" "$cpu" \
		"$(awk -v c="$cpu" -v u="$upcalls" 'BEGIN {printf "%.1f", (u > 0) ? c * 1e6 / u : 0}')" \
		"$(jnum lat_us_p50 "$rcv")" "$(jnum lat_us_p90 "$rcv")" "$(jnum lat_us_p99 "$rcv")" "$(jnum lat_us_max "$rcv")" \
		"$verdict" >>"$res"
	say "  $(tail -1 "$res")"
	stop_switch "$sw"
}

for sw in $SWITCHES; do
	say "capacity: $sw"
	rate=$START pass=0 fail=0
	while :; do
		step "$sw" "$rate"
		[[ $verdict == error ]] && break
		if [[ $verdict == pass ]]; then
			pass=$rate
			rate=$(awk -v r="$rate" -v f="$FACTOR" 'BEGIN {printf "%d", r * f}')
			((rate > MAXRATE)) && break
		else
			fail=$rate
			break
		fi
	done
	if ((pass > 0 && fail > 0)); then
		for _ in 1 2; do
			mid=$(((pass + fail) / 2))
			((mid <= pass || mid >= fail)) && break
			step "$sw" "$mid"
			[[ $verdict == pass ]] && pass=$mid || fail=$mid
		done
	fi
	printf '{"switch":"%s","summary":true,"max_lossfree_rate":%d,"first_fail_rate":%d}\n' "$sw" "$pass" "$fail" >>"$res"
	say "  $sw: highest loss-free rate $pass/s (first failure at $fail/s)"
done
say "done: $res"
