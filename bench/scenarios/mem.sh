#!/usr/bin/env bash
# mem.sh: where each switch's resident memory goes in the bench scenarios,
# run INSIDE the bed as root. Build the binaries on the host, then:
#
#   CGO_ENABLED=0 go build -trimpath -o OUT/bin/ ./cmd/govswitchd ./cmd/govbench ./bench/scenarios/profswitchd
#   scripts/kernel-test --exec "BIN=OUT/bin bash bench/scenarios/mem.sh OUT"
#
# For every switch (MEMSWITCHES, default "ovs gov mprof"; mprof is
# profswitchd --memprofile under GODEBUG=memprofilerate=1, which samples
# every allocation; gov-nothp is govswitchd under GODEBUG=disablethp=1,
# gov-thp under GOVSWITCH_HUGEPAGES=1, gov-gogcN under GOGC=N)
# and configuration (MEMCONFIGS, default "normal acl") it
# starts the switch as bed.sh does, offers bed.sh's load for SECS seconds
# (MEMSECS, default 7: bed.sh's warm-up and timed run), and then records in
# OUT/mem.<switch>.<config>.txt (…<config>.r<N>.txt with MEMROUNDS=N > 1): /proc/PID/status's Vm and Rss lines, the
# threads, smaps_rollup, every mapping of smaps with its Rss, Anonymous and
# AnonHugePages, those summed by kind (the binary's text, rodata and data,
# bss and heap, stacks, other anonymous, other files), and memory/show.
# For mprof it also writes OUT/heap.<config>.pprof (+ .txt, the
# runtime.MemStats read before the GC that precedes the profile, and
# .goroutines). RSS does not depend on timing, so the UML bed does.
set -uo pipefail
out=${1:?usage: mem.sh OUTDIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BED_LIB=1 PROFILE=0 ROUNDS=1 source "$here/bed.sh" "$out"
SWITCHES=${MEMSWITCHES:-ovs gov mprof}
CONFIGS=${MEMCONFIGS:-normal acl}
SECS=${MEMSECS:-7}
ROUNDS=${MEMROUNDS:-1}

# kinds PID: the smaps mappings summed by kind, in kB.
kinds() {
	awk -v exe="$(readlink "/proc/$1/exe")" '
		/^[0-9a-f]+-[0-9a-f]+ / {
			perms = $2; path = (NF >= 6) ? $6 : ""
			if (path == exe || path ~ /ovs-vswitchd$/) kind = "binary " perms
			else if (path == "[heap]") kind = "[heap]"
			else if (path ~ /^\[stack/) kind = "[stack]"
			else if (path ~ /^\[/) kind = path
			else if (path == "") kind = "anonymous " perms
			else if (path ~ /\.so/) kind = "shared libraries"
			else kind = "other files"
			next
		}
		/^Rss:/ { rss[kind] += $2 }
		/^Anonymous:/ { anon[kind] += $2 }
		/^AnonHugePages:/ { huge[kind] += $2 }
		END {
			printf "%-28s %8s %8s %8s\n", "kind", "Rss", "Anon", "AnonHuge"
			for (k in rss) if (rss[k] > 0) printf "%-28s %8d %8d %8d\n", k, rss[k], anon[k], huge[k]
		}' "/proc/$1/smaps" | sort -k1,1
}

# mappings PID: every mapping with resident pages.
mappings() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / { m = $1 " " $2 " " ((NF >= 6) ? $6 : "(anon)"); next }
		/^Size:/ { sz = $2 }
		/^Rss:/ { rss = $2 }
		/^Anonymous:/ { an = $2 }
		/^AnonHugePages:/ { if (rss > 0) printf "%-80s size %7d rss %7d anon %7d huge %6d\n", m, sz, rss, an, $2 }' "/proc/$1/smaps"
}

# The kernel's settings that decide how much of a touched mapping is
# resident: transparent huge pages (a touched 2 MB stretch of anonymous
# memory can be backed whole) and fault-around (a fault on a file page maps
# its cached neighbours, fault_around_bytes, 64 KB by default). With
# FAULTAROUND=4096 the bed maps only the file pages touched.
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug 2>/dev/null
[[ -n ${FAULTAROUND:-} ]] && echo "$FAULTAROUND" >/sys/kernel/debug/fault_around_bytes
{
	printf 'kernel=%s\n' "$(uname -r)"
	printf 'thp=%s\n' "$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>&1)"
	printf 'fault_around_bytes=%s\n' "$(cat /sys/kernel/debug/fault_around_bytes 2>&1)"
} >"$out/bed.txt"
topology || { say "topology failed"; exit 1; }
while awk '{exit !($1 < 11)}' /proc/uptime; do sleep 0.2; done
for ((r = 1; r <= ROUNDS; r++)); do
for cfg in $CONFIGS; do
	for sw in $SWITCHES; do
		say "mem: $sw $cfg${r/#/ round }"
		# gov-nothp: govswitchd with GODEBUG=disablethp=1; gov-thp:
		# govswitchd with GOVSWITCH_HUGEPAGES=1 (internal/nothp).
		if [[ $sw == gov-nothp ]]; then
			GODEBUG=disablethp=1 start_switch gov "$cfg"
		elif [[ $sw == gov-thp ]]; then
			GOVSWITCH_HUGEPAGES=1 start_switch gov "$cfg"
		elif [[ $sw == gov-gogc* ]]; then
			GOGC=${sw#gov-gogc} start_switch gov "$cfg"
		else
			start_switch "$sw" "$cfg"
		fi || { say "  $why"; stop_switch "$sw"; continue; }
		quiet ip netns exec h1 "$BIN/govbench" rate -r "$remote" -T "$SECS"
		f="$out/mem.$sw.$cfg.txt"
		((ROUNDS > 1)) && f="$out/mem.$sw.$cfg.r$r.txt"
		{
			echo "== status"
			grep -E '^(Name|Vm|Rss|Threads|THP)' "/proc/$pid/status"
			printf 'thread names: %s\n' "$(cat /proc/"$pid"/task/*/comm | sort | uniq -c | tr -s ' \n' ' ')"
			echo "== smaps_rollup"
			cat "/proc/$pid/smaps_rollup"
			echo "== by kind (kB)"
			kinds "$pid"
			echo "== mappings (kB)"
			mappings "$pid"
			echo "== memory/show"
			ovsenv ovs-appctl memory/show 2>&1
			echo "== dpctl"
			ovs-dpctl show 2>&1 | grep -E 'flows|lookups|masks'
		} >"$f"
		if [[ $sw == mprof ]]; then
			kill -USR1 "$pid"
			for ((i = 0; i < 50; i++)); do [[ -s $out/heap.$cfg.pprof ]] && break; sleep 0.2; done
			sleep 0.5
		fi
		say "  $(grep -E '^VmHWM|^VmRSS' "$f" | tr -s ' \n' ' ')"
		stop_switch "${sw%-*}"
	done
done
done
