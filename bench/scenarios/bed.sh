#!/usr/bin/env bash
# bed.sh: the side-by-side flow-setup scenarios, run INSIDE the bed (UML, or
# the vm bed with --bed vm) as root (bench/scenarios/run starts it through
# scripts/kernel-test --exec).
#
#   bash bed.sh OUTDIR
#
# Environment (set by run): BIN (folder holding govswitchd and govbench),
# ROUNDS, SECS (timed run, s), WARMUP (s), RULES (tcp_dst rules in the L4
# table), PROFILE (1: also count syscalls per upcall with strace -c),
# SWITCHES (default "ovs gov govg"; "base" is $BASEBIN/govswitchd, another
# build of govswitchd for before/after comparisons in one boot; "govn" is
# govswitchd --scheduling normal, its threads under SCHED_OTHER; "ovsb"
# is ovs-vswitchd under `chrt -b 0`, SCHED_BATCH like govswitchd's
# default; "gov1" and "gov2" are govswitchd with --handlers 1 and 2; "mprof"
# is profswitchd --memprofile OUTDIR/heap.CONFIG.pprof with every
# allocation sampled, for bench/scenarios/mem.sh; "govthp" is govswitchd
# with GOVSWITCH_HUGEPAGES=1, transparent huge pages as the kernel has
# them, internal/nothp), CONFIGS
# (default "exact acl normal"), EXTRAS (1: the ceiling runs and the
# fixed-rate runs too; default 1).
#
# Topology, built once per boot: namespaces h1 (10.0.0.1, eth e1) and h2
# (10.0.0.2, eth e2) on veth pairs whose host ends v1 and v2 are the two
# ports of the switch under test (OpenFlow port 1 = v1, port 2 = v2; the
# static runs' own datapath br0 numbers them 1 and 2 too).
# IPv6 is off everywhere so no neighbour discovery adds misses.
#
# Workload, fixed for every run: `govbench rate -r 10.0.0.2:1024-65535`
# from h1 with no listener in h2. Each attempt is a SYN to a new
# destination port (ovs-benchmark's port order: the remote port advances
# on every attempt when -l has no ports), which h2 answers with a RST:
# two new flows per attempt, one each way, and no TCP state left behind
# (no TIME_WAIT), which is what makes runs repeatable (the ovs-benchmark
# man page says the same).
#
# Every run gets a fresh switch and datapath: start, configure, warm up
# (WARMUP s of the same load: ARP, MAC learning, first flows), then the
# timed run between two readings of the counters, then stop and delete
# the datapath. One JSON object per run is appended to OUTDIR/runs.jsonl;
# OUTDIR/log holds everything the tools printed.
set -uo pipefail

out=${1:?usage: bed.sh OUTDIR}
BIN=${BIN:?BIN must name the folder with govswitchd and govbench}
ROUNDS=${ROUNDS:-4}
SECS=${SECS:-5}
WARMUP=${WARMUP:-2}
RULES=${RULES:-400}
PROFILE=${PROFILE:-1}
SWITCHES=${SWITCHES:-ovs gov govg}
CONFIGS=${CONFIGS:-exact acl normal}
EXTRAS=${EXTRAS:-1}
mkdir -p "$out"
runs="$out/runs.jsonl"
log="$out/log"
: >"$runs"
exec 3>>"$log"
say() { printf '%s\n' "$*"; printf '%s %s\n' "$(date +%T)" "$*" >&3; }
quiet() { "$@" >&3 2>&1; }

tck=$(getconf CLK_TCK)
work=/run/gvsbench
mkdir -p "$work"
remote=10.0.0.2:1024-65535

# --- topology ------------------------------------------------------------------
topology() {
	sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	ip netns add h1 && ip netns add h2 || return 1
	for n in h1 h2; do
		ip netns exec "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
		ip netns exec "$n" sysctl -qw net.ipv4.ip_local_port_range="1024 65535" net.ipv4.tcp_tw_reuse=1
	done
	ip link add v1 type veth peer name e1 netns h1 &&
		ip link add v2 type veth peer name e2 netns h2 &&
		ip link set v1 up && ip link set v2 up &&
		ip -n h1 addr add 10.0.0.1/24 dev e1 && ip -n h1 link set e1 up && ip -n h1 link set lo up &&
		ip -n h2 addr add 10.0.0.2/24 dev e2 && ip -n h2 link set e2 up && ip -n h2 link set lo up
}

# The L4 table: RULES allow rules (actions=NORMAL) on tcp_dst ports
# spread evenly over the ports the load uses (1024 + i*step), and a NORMAL
# catch-all. Every packet is forwarded as with NORMAL alone, but a switch
# cannot know that without classifying tcp_dst: its megaflows must carry
# enough of tcp_dst to tell the rule ports apart, so new destination
# ports (and the RSTs' ephemeral ports) keep missing the datapath. Rules
# on ports the load never reaches (say 1..400) would not do this: a
# classifier with port prefix tracking covers everything above them with
# a dozen megaflows. Drop rules would stall the load (a dropped SYN holds
# one of govbench's sockets through its retransmissions).
acl="$work/acl.flows"
{
	step=$((64512 / RULES))
	for ((i = 0; i < RULES; i++)); do
		printf 'priority=100,tcp,tp_dst=%d,actions=NORMAL\n' $((1024 + i * step + step / 2))
	done
	printf 'priority=0,actions=NORMAL\n'
} >"$acl"

# --- switches ------------------------------------------------------------------
# start_switch SWITCH CONFIG sets pid (the daemon's pid, empty for none)
# and dir; it returns non-zero with why set when the run cannot be made.
pid="" dir="" why="" ctl=""
ovsenv() { env OVS_RUNDIR="$dir" OVS_LOGDIR="$dir" OVS_DBDIR="$dir" "$@"; }

start_switch() {
	local sw=$1 cfg=$2 i
	pid="" why="" ctl=""
	dir=$(mktemp -d "$work/sw.XXXXXX")
	case $sw in
	ovs | ovsb)
		local wrap=()
		[[ $sw == ovsb ]] && wrap=(chrt -b 0)
		ovsenv ovsdb-tool create "$dir/conf.db" /usr/share/openvswitch/vswitch.ovsschema >&3 2>&1 &&
			ovsenv ovsdb-server "$dir/conf.db" --remote="punix:$dir/db.sock" --pidfile --detach \
				--log-file="$dir/ovsdb-server.log" >&3 2>&1 &&
			ovsenv ovs-vsctl --db="unix:$dir/db.sock" --no-wait init >&3 2>&1 &&
			ovsenv "${wrap[@]}" ovs-vswitchd "unix:$dir/db.sock" --pidfile --detach --log-file="$dir/ovs-vswitchd.log" >&3 2>&1 &&
			ovsenv ovs-vsctl --db="unix:$dir/db.sock" --timeout=30 add-br br0 \
				-- add-port br0 v1 -- add-port br0 v2 >&3 2>&1 || { why="ovs-vswitchd did not start"; return 1; }
		pid=$(cat "$dir/ovs-vswitchd.pid")
		ctl="unix:$dir/br0.mgmt"
		case $cfg in
		exact) ovsenv ovs-appctl upcall/disable-megaflows >&3 2>&1 || { why="disable-megaflows failed"; return 1; } ;;
		esac
		;;
	gov | govg | govn | gov1 | gov2 | govthp | prof | mprof | base)
		local extra=() cmd=("$BIN/govswitchd")
		[[ $sw == govn ]] && extra+=(--scheduling normal)
		[[ $sw == gov1 ]] && extra+=(--handlers 1)
		[[ $sw == gov2 ]] && extra+=(--handlers 2)
		[[ $cfg == exact ]] && extra+=(--disable-megaflows)
		[[ $sw == govg ]] && extra+=(--governor)
		[[ $sw == prof ]] && cmd=("$BIN/profswitchd" --cpuprofile "$out/cpu.pprof")
		[[ $sw == govthp ]] && cmd=(env GOVSWITCH_HUGEPAGES=1 "$BIN/govswitchd")
		[[ $sw == mprof ]] && cmd=(env GODEBUG=memprofilerate=1 "$BIN/profswitchd" --memprofile "$out/heap.$cfg.pprof")
		[[ $sw == base ]] && cmd=("${BASEBIN:?base needs BASEBIN}/govswitchd")
		"${cmd[@]}" --datapath system --rundir "$dir" --bridge br0 --port v1 --port v2 \
			"${extra[@]}" >"$dir/govswitchd.log" 2>&1 &
		pid=$!
		for ((i = 0; i < 100; i++)); do
			ovsenv ovs-appctl upcall/show >/dev/null 2>&1 && break
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if ! ovsenv ovs-appctl upcall/show >/dev/null 2>&1; then
			why="govswitchd did not start: $(tail -c 300 "$dir/govswitchd.log" | tr '\n"' ' _')"
			return 1
		fi
		ctl="unix:$dir/br0.mgmt"
		;;
	none)
		# The ceiling: no daemon, wildcard flows that forward between the
		# two ports whatever the addresses and ports.
		ovs-dpctl add-dp br0 >&3 2>&1 && ovs-dpctl add-if br0 v1 >&3 2>&1 && ovs-dpctl add-if br0 v2 >&3 2>&1 &&
			ovs-dpctl add-flow br0 'in_port(1),eth(),eth_type(0x0800),ipv4()' 2 >&3 2>&1 &&
			ovs-dpctl add-flow br0 'in_port(2),eth(),eth_type(0x0800),ipv4()' 1 >&3 2>&1 &&
			ovs-dpctl add-flow br0 'in_port(1),eth(),eth_type(0x0806),arp()' 2 >&3 2>&1 &&
			ovs-dpctl add-flow br0 'in_port(2),eth(),eth_type(0x0806),arp()' 1 >&3 2>&1 ||
			{ why="static datapath flows failed"; return 1; }
		;;
	esac
	if [[ $cfg == acl ]]; then
		# govswitchd's OpenFlow channel may not exist yet: the run is
		# skipped, not failed, until `ovs-ofctl show` answers on it.
		if ! ovs-ofctl show "$ctl" >&3 2>&1; then
			why="skipped: no OpenFlow on RUNDIR/br0.mgmt (ovs-ofctl show failed)"
			return 2
		fi
		ovs-ofctl add-flows "$ctl" "$acl" >&3 2>&1 || { why="ovs-ofctl add-flows failed"; return 1; }
		local n
		n=$(ovs-ofctl dump-flows "$ctl" 2>/dev/null | grep -c 'actions=')
		if ((n < RULES + 1)); then
			why="the switch holds $n OpenFlow rules, wanted $((RULES + 1))"
			return 1
		fi
	fi
	return 0
}

stop_switch() {
	local sw=$1 i
	case $sw in
	ovs | ovsb)
		ovsenv ovs-appctl exit --cleanup >&3 2>&1
		[[ -f $dir/ovsdb-server.pid ]] && kill "$(cat "$dir/ovsdb-server.pid")" 2>/dev/null
		;;
	gov | govg | govn | gov1 | gov2 | govthp | prof | mprof | base)
		kill -TERM "$pid" 2>/dev/null
		for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		;;
	esac
	# ovs-vswitchd may exit after returning from `exit`; wait for it so the
	# next switch does not race it for the datapath.
	if [[ $sw == ovs* && -n $pid ]]; then
		for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
	fi
	local dp
	for dp in $(ovs-dpctl dump-dps 2>/dev/null); do ovs-dpctl del-dp "$dp" >/dev/null 2>&1; done
	ip -n h1 neigh flush all 2>/dev/null
	ip -n h2 neigh flush all 2>/dev/null
	rm -rf "$dir"
}

# --- counters ------------------------------------------------------------------
cpu_ticks() { # utime+stime of a process, in clock ticks
	[[ -n $1 && -r /proc/$1/stat ]] || { echo 0; return; }
	sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'
}
hwm_kb() {
	[[ -n $1 && -r /proc/$1/status ]] || { echo 0; return; }
	awk '/^VmHWM:/ {print $2}' "/proc/$1/status"
}
dpstats() { # prints "missed lost flows masks" of the one datapath there is
	# ovs-vswitchd and govswitchd name their datapath ovs-system; the
	# static runs name it br0. Runs delete it, so there is one at a time.
	ovs-dpctl show 2>/dev/null | awk '
		/lookups:/ { for (i = 1; i <= NF; i++) { split($i, a, ":"); if (a[1] == "missed") m = a[2]; if (a[1] == "lost") l = a[2] } }
		/flows:/ { f = $2 }
		/masks:/ { for (i = 1; i <= NF; i++) { split($i, a, ":"); if (a[1] == "total") k = a[2] } }
		END { printf "%d %d %d %d\n", m, l, f, k }'
}

# idle_ticks prints the bed's idle + iowait jiffies, summed over its CPUs
# (one in UML, two in the vm bed): the share of a run the CPUs had nothing
# to do says whether the load was CPU bound or waiting (on the switch's
# latency, say).
idle_ticks() { awk '/^cpu / {print $5 + $6; exit}' /proc/stat; }
# ctxt prints the bed's context switches so far; in UML a switch between
# processes is costly, so switches per attempt matter as much as CPU.
ctxt() { awk '/^ctxt / {print $2; exit}' /proc/stat; }
# daemon_csw PID prints the context switches of all the process's threads.
daemon_csw() {
	[[ -n $1 && -d /proc/$1/task ]] || { echo 0; return; }
	cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches:/ {n += $2} END {print n + 0}'
}

# tcpstat NS prints "PassiveOpens OutRsts RetransSegs" of namespace NS
# (/proc/net/snmp is per namespace): in h2 the first two prove the
# attempts reached it, in h1 the last counts SYNs sent again (dropped).
tcpstat() {
	ip netns exec "$1" awk '/^Tcp:/ { if (!h) { for (i = 2; i <= NF; i++) c[$i] = i; h = 1 } else
		printf "%d %d %d\n", $c["PassiveOpens"], $c["OutRsts"], $c["RetransSegs"] }' /proc/net/snmp
}

# jnum KEY JSON prints a number field of govbench's --json line (0 if absent).
jnum() { sed -n "s/.*\"$1\":\([0-9.eE+-]*\).*/\1/p" <<<"$2" | head -1 | grep . || echo 0; }

# --- one run -------------------------------------------------------------------
# run_one ROUND SEQ SWITCH CONFIG [MAXRATE] appends one JSON line. CONFIG
# is exact, acl, normal, static (no daemon) or listen (no daemon, and a
# listener in h2); with MAXRATE the run is recorded as config exact-fixed.
run_one() {
	local round=$1 seq=$2 sw=$3 cfg=$4 maxrate=${5:-} rc label=$4
	local args=(rate -r "$remote") listener=""
	if [[ -n $maxrate ]]; then
		args+=(-c "$maxrate")
		label=$cfg-fixed
	fi
	if [[ $cfg == listen ]]; then
		# The generator's own ceiling: the static flows, and a listener on
		# ten ports so every attempt completes a handshake.
		args=(rate -r 10.0.0.2:6630-6639)
	fi
	say "round $round #$seq: $sw $label${maxrate:+ at $maxrate/s}"
	start_switch "$sw" "$cfg"
	rc=$?
	if ((rc != 0)); then
		say "  $why"
		printf '{"round":%d,"seq":%d,"switch":"%s","config":"%s","status":"%s"}\n' \
			"$round" "$seq" "$sw" "$label" "${why//\"/_}" >>"$runs"
		stop_switch "$sw"
		return
	fi
	if [[ $cfg == listen ]]; then
		ip netns exec h2 "$BIN/govbench" listen -l 10.0.0.2:6630-6639 >&3 2>&1 &
		listener=$!
		sleep 0.3
	fi
	quiet ip netns exec h1 "$BIN/govbench" "${args[@]}" -T "$WARMUP"
	local c0 s0 c1 s1 i0 i1 x0 x1 d0 d1 res hwm t20 t10 t21 t11
	c0=$(cpu_ticks "$pid")
	i0=$(idle_ticks)
	x0=$(ctxt)
	d0=$(daemon_csw "$pid")
	s0=$(dpstats)
	t20=$(tcpstat h2)
	t10=$(tcpstat h1)
	res=$(ip netns exec h1 "$BIN/govbench" "${args[@]}" -T "$SECS" --json 2>>"$log" | tee -a "$log" | tail -1)
	c1=$(cpu_ticks "$pid")
	i1=$(idle_ticks)
	x1=$(ctxt)
	d1=$(daemon_csw "$pid")
	s1=$(dpstats)
	t21=$(tcpstat h2)
	t11=$(tcpstat h1)
	hwm=$(hwm_kb "$pid")
	if [[ -n $pid ]]; then
		# What the daemon says its memory holds, for the results page.
		printf 'memory/show (%s %s): %s\n' "$sw" "$label" \
			"$(ovsenv ovs-appctl memory/show 2>&1 | tr '\n' ' ')" >>"$out/memory.txt"
		# And what the kernel counts: with transparent huge pages on
		# (the vm bed's Debian kernel says always), a touched 2 MB
		# stretch of heap can be resident whole.
		printf 'smaps (%s %s): %s\n' "$sw" "$label" \
			"$(awk '/^(Rss|Anonymous|AnonHugePages):/ {printf "%s %s kB  ", $1, $2}' "/proc/$pid/smaps_rollup" 2>&1)" >>"$out/memory.txt"
	fi
	[[ -n $listener ]] && { kill "$listener" 2>/dev/null; wait "$listener" 2>/dev/null; }
	local m0 l0 m1 l1 f1 _
	read -r m0 l0 _ <<<"$s0"
	read -r m1 l1 f1 k1 <<<"$s1"
	local pa0 rs0 pa1 rs1 rt0 rt1
	read -r pa0 rs0 _ <<<"$t20"
	read -r pa1 rs1 _ <<<"$t21"
	read -r _ _ rt0 <<<"$t10"
	read -r _ _ rt1 <<<"$t11"
	local completed elapsed failed
	completed=$(jnum completed "$res")
	failed=$(jnum failed "$res")
	elapsed=$(jnum elapsed_s "$res")
	if [[ $elapsed == 0 ]]; then
		say "  govbench printed no summary: $res"
		printf '{"round":%d,"seq":%d,"switch":"%s","config":"%s","status":"govbench failed"}\n' \
			"$round" "$seq" "$sw" "$label" >>"$runs"
	else
		printf '{"round":%d,"seq":%d,"switch":"%s","config":"%s","status":"ok","max_rate":%s,"elapsed_s":%s,"attempts":%s,"failed":%s,"cpu_s":%s,"upcalls":%d,"lost":%d,"flows_end":%d,"masks_end":%d,"hwm_kb":%d,"h2_rsts":%d,"h2_accepts":%d,"h1_retrans":%d,"idle_s":%s,"ctxt":%d,"daemon_csw":%d,"daemon":%s}\n' \
			"$round" "$seq" "$sw" "$label" "${maxrate:-0}" "$elapsed" "$completed" "$failed" \
			"$(awk -v a="$c0" -v b="$c1" -v t="$tck" 'BEGIN {printf "%.2f", (b - a) / t}')" \
			$((m1 - m0)) $((l1 - l0)) "$f1" "${k1:-0}" "${hwm:-0}" $((rs1 - rs0)) $((pa1 - pa0)) $((rt1 - rt0)) \
			"$(awk -v a="$i0" -v b="$i1" -v t="$tck" 'BEGIN {printf "%.2f", (b - a) / t}')" $((x1 - x0)) $((d1 - d0)) \
			"$([[ -n $pid ]] && echo true || echo false)" >>"$runs"
		say "  $(tail -1 "$runs")"
	fi
	stop_switch "$sw"
}

# profile_one SWITCH: one exact-match run with strace -c -f attached to the
# daemon for the timed part. strace slows the daemon down many times, so
# only the syscall counts per upcall are worth reading, not the rate.
profile_one() {
	local sw=$1 st
	say "profile: $sw exact under strace -c"
	start_switch "$sw" exact || { say "  $why"; stop_switch "$sw"; return; }
	quiet ip netns exec h1 "$BIN/govbench" rate -r "$remote" -T "$WARMUP"
	local s0 s1 m0 m1 _
	s0=$(dpstats)
	strace -c -f -q -p "$pid" -o "$out/strace.$sw.txt" &
	st=$!
	sleep 0.5
	quiet ip netns exec h1 "$BIN/govbench" rate -r "$remote" -T "$SECS"
	kill -INT "$st" 2>/dev/null
	wait "$st" 2>/dev/null
	s1=$(dpstats)
	read -r m0 _ _ <<<"$s0"
	read -r m1 _ _ <<<"$s1"
	printf 'upcalls during the trace (approximately): %d\n' $((m1 - m0)) >>"$out/strace.$sw.txt"
	stop_switch "$sw"
}

# pprof_one: one exact-match run of govswitchd built with a CPU profile
# (bench/scenarios/profswitchd), written to OUTDIR/cpu.pprof when it stops.
# The profile covers the warm-up too; run turns it into pprof.top.txt.
pprof_one() {
	say "profile: govswitchd exact with a CPU profile"
	start_switch prof exact || { say "  $why"; stop_switch prof; return; }
	quiet ip netns exec h1 "$BIN/govbench" rate -r "$remote" -T $((WARMUP + SECS))
	local s
	s=$(dpstats)
	printf 'upcalls=%s\n' "${s%% *}" >"$out/cpu.pprof.txt"
	stop_switch prof
}

# --- main ----------------------------------------------------------------------
# With BED_LIB=1 the file only defines the functions above (latency.sh
# sources it).
[[ ${BED_LIB:-0} == 1 ]] && return 0
topology || { say "topology failed"; exit 1; }
# ovs-vswitchd 3.1 started before 10 s of uptime gets no handler threads.
while awk '{exit !($1 < 11)}' /proc/uptime; do sleep 0.2; done

{
	printf 'kernel=%s\n' "$(uname -r)"
	printf 'cpus=%s\n' "$(nproc)"
	printf 'ovs=%s\n' "$(ovs-vswitchd --version | head -1)"
	printf 'govswitchd=%s\n' "$("$BIN/govswitchd" --version)"
	printf 'govbench=%s\n' "$("$BIN/govbench" --version)"
	printf 'rounds=%s\nsecs=%s\nwarmup=%s\nrules=%s\n' "$ROUNDS" "$SECS" "$WARMUP" "$RULES"
} >"$out/guest.txt"

read -ra switches <<<"$SWITCHES"
read -ra configs <<<"$CONFIGS"
seq=0
for ((r = 0; r < ROUNDS; r++)); do
	# Rotate the switches' order every round: A B C, B C A, C A B, ...
	order=()
	for ((k = 0; k < ${#switches[@]}; k++)); do
		order+=("${switches[(r + k) % ${#switches[@]}]}")
	done
	for cfg in "${configs[@]}"; do
		for sw in "${order[@]}"; do
			run_one "$r" $((seq++)) "$sw" "$cfg"
		done
	done
	((EXTRAS)) || continue
	run_one "$r" $((seq++)) none static
	run_one "$r" $((seq++)) none listen
	# Fixed rate: govswitchd at ovs-vswitchd's exact-match rate of this
	# round, for CPU per upcall and lost upcalls at equal load.
	ovsrate=$(grep "\"round\":$r,.*\"switch\":\"ovs\",\"config\":\"exact\",\"status\":\"ok\"" "$runs" |
		sed -n 's/.*"elapsed_s":\([0-9.]*\),"attempts":\([0-9]*\).*/\2 \1/p' | awk '{printf "%d", $1 / $2}')
	if [[ -n $ovsrate && $ovsrate -gt 0 ]]; then
		for sw in gov govg; do
			run_one "$r" $((seq++)) "$sw" exact "$ovsrate"
		done
	fi
done
if [[ $PROFILE == 1 ]] && command -v strace >/dev/null; then
	profile_one ovs
	profile_one gov
fi
if [[ $PROFILE == 1 && -x $BIN/profswitchd ]]; then
	pprof_one
fi
say "done: $runs"
