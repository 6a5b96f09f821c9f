#!/usr/bin/env bash
# bed.sh: scripts/ovn-sandbox's part that runs INSIDE the bed, as root.
#
#   bash bed.sh OUTDIR SWITCH:BINARY... 
#
# Environment: SCENARIOS (letters, default "abcde"), WAIT (seconds each OVN
# wait may take, default 120).
#
# For each SWITCH (a label, govswitchd or ovs-vswitchd) it starts, in a fresh
# folder under /tmp/ovn: the OVN northbound and southbound ovsdb-servers,
# ovn-northd, an ovsdb-server with the Open_vSwitch database, BINARY with
# ovs-vswitchd's own command line, and ovn-controller (system-id hv1,
# ovn-remote the southbound socket, geneve, encap-ip 127.0.0.1), which
# creates br-int. The scenarios then build on each other:
#   a  logical switch ls1, ports vm1 (10.0.1.11) and vm2 (10.0.1.12)
#   b  router lr1 between ls1 and ls2 (vm3, 10.0.2.13): ARP for the router
#      through the controller path, ping and TCP across
#   c  ACLs on ls1 (to-lport allow-related icmp and tcp/8080, drop the rest
#      of ip4): ping and 8080 pass, 8081 does not, conntrack holds entries
#      in nonzero zones; then the ACLs go again
#   d  lr1 becomes a gateway router on hv1 with dnat_and_snat 10.0.2.100 ->
#      vm1: vm3 reaches vm1 at 10.0.2.100 (DNAT), vm3 sees vm1's
#      connections from 10.0.2.100 (SNAT); then the NAT goes again
#   e  load balancer 10.0.1.100:80 -> vm1:8080, vm2:8080 on ls2: vm3's
#      connections reach both backends
#   f  a second chassis, hv2: its own network namespace (hv2) holding its
#      own ovsdb-server, switch (the same BINARY) and ovn-controller, joined
#      to hv1 by an underlay veth (192.168.50.1 - .2, hv1's encap-ip is
#      .1 from the start); vm4 (10.0.1.14 on ls1) hangs off hv2's br-int.
#      Both chassis make a geneve port to the other; vm1 and vm4 ping and
#      connect both ways across the tunnel, and vm3 reaches vm4 through
#      the router. f needs only a: `abf` or `af` run too.
#   g  OVN's native DHCP and DNS, answered by ovn-controller through the
#      switch's controller path (packet-in2 and resume): vm5 on ls1 has
#      no address until busybox udhcpc gets 10.0.1.15 and router 10.0.1.1
#      from ls1's DHCP options; vm2 resolves vm1.ovn.test (ls1's DNS
#      records) to 10.0.1.11, asking vm1 itself (OVN answers any query on
#      UDP port 53 of a switch with DNS records). g needs only a.
# Each namespace's port is a veth whose switch end is on br-int with
# external_ids:iface-id naming its logical port. Every scenario's result
# line goes to stdout and OUTDIR/SWITCH/results as
#   SWITCH SCENARIO pass|fail FLOWS GROUPS METERS DETAIL
# (FLOWS: `ovs-ofctl -O OpenFlow15 dump-flows br-int` lines with actions=),
# and OUTDIR/SWITCH/warnings holds every WARN/ERR/EMER line ovn-controller
# and the switch logged. Logs stay in OUTDIR/SWITCH/.
set -uo pipefail
out=${1:?usage: bed.sh OUTDIR SWITCH:BINARY...}
shift
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SCENARIOS=${SCENARIOS:-abcdefg}
WAIT=${WAIT:-120}
tcp() { /usr/bin/python3 "$here/tcp.py" "$@"; }

# ovs-vswitchd 3.1 started before 10 s of uptime counts no cores.
while (($(cut -d. -f1 /proc/uptime) < 12)); do sleep 1; done
modprobe -q geneve 2>/dev/null || true

nsdel() { for n in vm1 vm2 vm3 vm4 vm5 hv2; do ip netns del "$n" 2>/dev/null; done; }

# in_hv2 CMD...: CMD in chassis hv2's network namespace, with its run
# folder as the OVS and OVN tools' default.
in_hv2() {
	local d2=$OVS_RUNDIR/hv2
	ip netns exec hv2 env OVS_RUNDIR="$d2" OVS_LOGDIR="$d2" OVS_DBDIR="$d2" OVN_RUNDIR="$d2" \
		OVN_LOGDIR="$d2" OVN_DBDIR="$d2" "$@"
}

stop_all() {
	local d=$1
	if [[ -d $d/hv2 ]]; then
		in_hv2 ovn-appctl -t ovn-controller exit >/dev/null 2>&1
		in_hv2 timeout 30 ovs-appctl -t ovs-vswitchd exit --cleanup >/dev/null 2>&1
		for p in ovsdb-server ovs-vswitchd ovn-controller; do
			[[ -f $d/hv2/$p.pid ]] && kill "$(cat "$d/hv2/$p.pid" 2>/dev/null)" 2>/dev/null
		done
	fi
	env OVN_RUNDIR="$d" OVS_RUNDIR="$d" ovn-appctl -t ovn-controller exit >/dev/null 2>&1
	env OVS_RUNDIR="$d" timeout 30 ovs-appctl -t ovs-vswitchd exit --cleanup >/dev/null 2>&1
	for p in ovn-northd ovsdb-nb ovsdb-sb ovsdb-server ovs-vswitchd ovn-controller; do
		[[ -f $d/$p.pid ]] && kill "$(cat "$d/$p.pid" 2>/dev/null)" 2>/dev/null
	done
	if [[ -f $d/servers.pids ]]; then
		kill $(cat "$d/servers.pids") 2>/dev/null
		rm -f "$d/servers.pids"
	fi
	sleep 1
	nsdel
	ovs-dpctl del-dp ovs-system 2>/dev/null
	return 0
}

run_switch() {
	local sw=$1 bin=$2 d=/tmp/ovn/$1 o=$out/$1
	rm -rf "$d"; mkdir -p "$d" "$o"
	export OVS_RUNDIR=$d OVS_LOGDIR=$d OVS_DBDIR=$d OVN_RUNDIR=$d OVN_LOGDIR=$d OVN_DBDIR=$d
	local nb=unix:$d/nb.sock sb=unix:$d/sb.sock
	results=$o/results
	: >"$results"
	setup_fail() {
		echo "$sw setup fail - - - $*" | tee -a "$results"
		collect "$sw" "$d" "$o"
		stop_all "$d"
	}
	ovsdb-tool create "$d/nb.db" /usr/share/ovn/ovn-nb.ovsschema &&
		ovsdb-tool create "$d/sb.db" /usr/share/ovn/ovn-sb.ovsschema &&
		ovsdb-tool create "$d/conf.db" /usr/share/openvswitch/vswitch.ovsschema || { setup_fail "ovsdb-tool"; return; }
	ovsdb-server "$d/nb.db" --remote="p$nb" --pidfile="$d/ovsdb-nb.pid" --unixctl="$d/ovsdb-nb.ctl" \
		--log-file="$d/ovsdb-nb.log" --detach &&
		ovsdb-server "$d/sb.db" --remote="p$sb" --pidfile="$d/ovsdb-sb.pid" --unixctl="$d/ovsdb-sb.ctl" \
			--log-file="$d/ovsdb-sb.log" --detach &&
		ovsdb-server "$d/conf.db" --remote="punix:$d/db.sock" --pidfile="$d/ovsdb-server.pid" \
			--log-file="$d/ovsdb-server.log" --detach || { setup_fail "ovsdb-server"; return; }
	ovn-northd --ovnnb-db="$nb" --ovnsb-db="$sb" --pidfile="$d/ovn-northd.pid" \
		--log-file="$d/ovn-northd.log" --detach || { setup_fail "ovn-northd"; return; }
	ovs-vsctl --no-wait init || { setup_fail "ovs-vsctl init"; return; }
	"$bin" "unix:$d/db.sock" --pidfile="$d/ovs-vswitchd.pid" --log-file="$d/switch.log" --detach \
		>"$d/switch.out" 2>&1 || { setup_fail "$bin did not start: $(tail -c 300 "$d/switch.out")"; return; }
	ovs-vsctl set open_vswitch . external_ids:system-id=hv1 external_ids:ovn-remote="$sb" \
		external_ids:ovn-encap-type=geneve external_ids:ovn-encap-ip=192.168.50.1 \
		external_ids:hostname=hv1 || { setup_fail "ovs-vsctl set external_ids"; return; }
	ovn-controller "unix:$d/db.sock" --pidfile="$d/ovn-controller.pid" \
		--log-file="$d/ovn-controller.log" --detach || { setup_fail "ovn-controller"; return; }
	local i
	for ((i = 0; i < WAIT; i++)); do
		ovs-vsctl br-exists br-int 2>/dev/null && ovs-ofctl -O OpenFlow15 show br-int >/dev/null 2>&1 && break
		sleep 1
	done
	ovs-ofctl -O OpenFlow15 show br-int >/dev/null 2>&1 || { setup_fail "br-int did not come up"; return; }
	echo "$sw: $($bin --version | head -1); $(ovn-controller --version | head -1)"

	local s failed=""
	for s in $(echo "$SCENARIOS" | grep -o .); do
		if [[ -n $failed ]]; then
			# Each scenario builds on the ones before.
			echo "$sw $s skip - - - 0s after-$failed-failed" | tee -a "$results"
			continue
		fi
		local detail="" ok=1 t0=$SECONDS flows="" groups="" meters=""
		"scenario_$s" || ok=0
		[[ -n $flows ]] || snap "$s"
		local r=pass
		((ok)) || { r=fail; failed=$s; }
		echo "$sw $s $r $flows $groups $meters $((SECONDS - t0))s $detail" | tee -a "$results"
		collect "$sw" "$d" "$o" # as it goes: a bed that dies keeps the logs so far
	done
	collect "$sw" "$d" "$o"
	stop_all "$d"
}

# snap SCENARIO: the counts of the scenario's result line, and its flow
# dump; a scenario that takes its configuration away again calls it before.
snap() {
	flows=$(ovs-ofctl -O OpenFlow15 dump-flows br-int 2>/dev/null | grep -c 'actions=')
	groups=$(ovs-ofctl -O OpenFlow15 dump-groups br-int 2>/dev/null | grep -c 'group_id=')
	meters=$(ovs-ofctl -O OpenFlow15 dump-meters br-int 2>/dev/null | grep -c 'meter=')
	ovs-ofctl -O OpenFlow15 dump-flows br-int >"$o/flows.$1" 2>&1
	ovs-ofctl -O OpenFlow15 dump-groups br-int >"$o/groups.$1" 2>&1
}

collect() {
	local sw=$1 d=$2 o=$3 f
	for f in ovn-controller.log switch.log switch.out ovn-northd.log ovsdb-server.log; do
		[[ -f $d/$f ]] && cp "$d/$f" "$o/"
	done
	ovs-vsctl list datapath >"$o/datapath-table" 2>&1
	ovs-ofctl -O OpenFlow15 dump-tlv-map br-int >"$o/tlv-map" 2>&1
	ovs-vsctl show >"$o/vsctl-show" 2>&1
	ovs-appctl dpctl/dump-conntrack >"$o/conntrack" 2>&1
	ovs-appctl dpctl/dump-flows >"$o/dp-flows" 2>&1
	ovn-sbctl --db="unix:$d/sb.sock" show >"$o/sbctl-show" 2>&1
	grep -hE '\|(WARN|ERR|EMER)\||level=(WARN|ERROR)' "$d/ovn-controller.log" "$d/switch.log" "$d/switch.out" \
		2>/dev/null | sed "s/^/$sw: /" >"$o/warnings"
	if [[ -d $d/hv2 ]]; then
		mkdir -p "$o/hv2"
		for f in ovn-controller.log switch.log switch.out ovsdb-server.log; do
			[[ -f $d/hv2/$f ]] && cp "$d/hv2/$f" "$o/hv2/"
		done
		in_hv2 ovs-vsctl show >"$o/hv2/vsctl-show" 2>&1
		in_hv2 ovs-ofctl -O OpenFlow15 dump-flows br-int >"$o/hv2/flows" 2>&1
		in_hv2 ovs-appctl dpctl/dump-flows >"$o/hv2/dp-flows" 2>&1
		grep -hE '\|(WARN|ERR|EMER)\||level=(WARN|ERROR)' "$d/hv2/ovn-controller.log" "$d/hv2/switch.log" \
			"$d/hv2/switch.out" 2>/dev/null | sed "s|^|$sw/hv2: |" >>"$o/warnings"
	fi
}

nb() { ovn-nbctl --db="unix:$OVN_RUNDIR/nb.sock" "$@"; }
sync_hv() { nb --timeout="$WAIT" --wait=hv sync || { detail+="wait=hv-sync-timeout;"; return 1; }; }

# vm NAME MAC IP/LEN GW [hv2]: a namespace on a veth whose other end is on
# br-int (hv2's with a fifth argument) bound to logical port NAME.
vm() {
	local n=$1 mac=$2 ip=$3 gw=$4 on=() ns=() at=()
	if [[ ${5:-} == hv2 ]]; then
		on=(in_hv2) ns=(-n hv2) at=(netns hv2)
	fi
	ip netns add "$n" || return 1
	ip link add "$n-o" "${at[@]}" type veth peer name eth0 netns "$n" || return 1
	ip -n "$n" link set eth0 address "$mac" && ip -n "$n" addr add "$ip" dev eth0 &&
		ip -n "$n" link set eth0 up && ip -n "$n" link set lo up && ip "${ns[@]}" link set "$n-o" up &&
		ip -n "$n" route add default via "$gw" || return 1
	ip netns exec "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
	"${on[@]}" ovs-vsctl add-port br-int "$n-o" -- set interface "$n-o" external_ids:iface-id="$n" || return 1
	local port
	for port in 8080 8081; do
		ip netns exec "$n" /usr/bin/python3 "$here/tcp.py" serve "$port" "$n" </dev/null >/dev/null 2>&1 &
		echo $! >>"$OVS_RUNDIR/servers.pids"
	done
}

port_up() { nb --timeout="$WAIT" wait-until logical_switch_port "$1" up=true || { detail+="$1-not-up;"; return 1; }; }

# check LABEL CMD...: run it, note the label when it fails.
check() {
	local l=$1
	shift
	"$@" >"$o/check.out" 2>&1 || { detail+="$l;"; return 1; }
}
pingc() { ip netns exec "$1" ping -q -c 3 -i 0.3 -W 2 "$2"; }
getc() { ip netns exec "$1" /usr/bin/python3 "$here/tcp.py" get "$2" "$3"; }
# expect_tcp LABEL FROM IP PORT WANT: the answer must be WANT ("NAME PEER").
expect_tcp() {
	local l=$1 a
	a=$(getc "$2" "$3" "$4" 2>&1)
	[[ "$a" == "$5" ]] || { detail+="$l(got:${a//[[:space:]]/_});"; return 1; }
}

scenario_a() {
	local r=0
	nb ls-add ls1 &&
		nb lsp-add ls1 vm1 -- lsp-set-addresses vm1 "00:00:00:01:01:11 10.0.1.11" &&
		nb lsp-add ls1 vm2 -- lsp-set-addresses vm2 "00:00:00:01:01:12 10.0.1.12" || return 1
	vm vm1 00:00:00:01:01:11 10.0.1.11/24 10.0.1.1 && vm vm2 00:00:00:01:01:12 10.0.1.12/24 10.0.1.1 || return 1
	port_up vm1 && port_up vm2 && sync_hv || return 1
	check ping-vm1-vm2 pingc vm1 10.0.1.12 || r=1
	expect_tcp tcp-vm1-vm2 vm1 10.0.1.12 8080 "vm2 10.0.1.11" || r=1
	expect_tcp tcp-vm2-vm1 vm2 10.0.1.11 8080 "vm1 10.0.1.12" || r=1
	return $r
}

scenario_b() {
	local r=0
	nb ls-add ls2 && nb lsp-add ls2 vm3 -- lsp-set-addresses vm3 "00:00:00:01:02:13 10.0.2.13" &&
		nb lr-add lr1 &&
		nb lrp-add lr1 lr1-ls1 00:00:00:00:ff:01 10.0.1.1/24 &&
		nb lrp-add lr1 lr1-ls2 00:00:00:00:ff:02 10.0.2.1/24 &&
		nb lsp-add ls1 ls1-lr1 -- lsp-set-type ls1-lr1 router -- lsp-set-addresses ls1-lr1 router \
			-- lsp-set-options ls1-lr1 router-port=lr1-ls1 &&
		nb lsp-add ls2 ls2-lr1 -- lsp-set-type ls2-lr1 router -- lsp-set-addresses ls2-lr1 router \
			-- lsp-set-options ls2-lr1 router-port=lr1-ls2 || return 1
	vm vm3 00:00:00:01:02:13 10.0.2.13/24 10.0.2.1 || return 1
	port_up vm3 && sync_hv || return 1
	check ping-vm1-gw pingc vm1 10.0.1.1 || r=1
	check ping-vm1-vm3 pingc vm1 10.0.2.13 || r=1
	check ping-vm3-vm2 pingc vm3 10.0.1.12 || r=1
	expect_tcp tcp-vm1-vm3 vm1 10.0.2.13 8080 "vm3 10.0.1.11" || r=1
	expect_tcp tcp-vm3-vm2 vm3 10.0.1.12 8080 "vm2 10.0.2.13" || r=1
	return $r
}

scenario_c() {
	local r=0 a
	nb acl-add ls1 to-lport 1002 'ip4 && icmp4' allow-related &&
		nb acl-add ls1 to-lport 1001 'ip4 && tcp.dst == 8080' allow-related &&
		nb acl-add ls1 to-lport 1000 'ip4' drop || return 1
	sync_hv || return 1
	check ping-vm3-vm1 pingc vm3 10.0.1.11 || r=1
	expect_tcp tcp-vm3-vm1-8080 vm3 10.0.1.11 8080 "vm1 10.0.2.13" || r=1
	a=$(getc vm3 10.0.1.11 8081 2>&1) && { detail+="tcp-8081-not-dropped;"; r=1; }
	local n
	n=$(ovs-appctl dpctl/dump-conntrack 2>/dev/null | grep -c 'zone=')
	detail+="ct-zone-entries=$n;"
	((n > 0)) || { detail+="no-ct-entries;"; r=1; }
	snap c
	nb acl-del ls1 && sync_hv || r=1
	return $r
}

scenario_d() {
	local r=0
	nb set logical_router lr1 options:chassis=hv1 &&
		nb lr-nat-add lr1 dnat_and_snat 10.0.2.100 10.0.1.11 || return 1
	sync_hv || return 1
	check ping-vm3-natip pingc vm3 10.0.2.100 || r=1
	expect_tcp dnat-vm3-vm1 vm3 10.0.2.100 8080 "vm1 10.0.2.13" || r=1
	expect_tcp snat-vm1-vm3 vm1 10.0.2.13 8080 "vm3 10.0.2.100" || r=1
	# vm2 has no NAT: its connections keep their address.
	expect_tcp nonat-vm2-vm3 vm2 10.0.2.13 8080 "vm3 10.0.1.12" || r=1
	snap d
	nb lr-nat-del lr1 && nb remove logical_router lr1 options chassis && sync_hv || r=1
	return $r
}

scenario_e() {
	local r=0 i a seen=""
	nb lb-add lb1 10.0.1.100:80 10.0.1.11:8080,10.0.1.12:8080 tcp && nb ls-lb-add ls2 lb1 || return 1
	sync_hv || return 1
	for ((i = 0; i < 16; i++)); do
		a=$(getc vm3 10.0.1.100 80 2>&1) || { detail+="lb-connect-failed(${a//[[:space:]]/_});"; r=1; break; }
		seen+=" ${a%% *}"
	done
	[[ $seen == *vm1* && $seen == *vm2* ]] || { detail+="lb-backends:${seen// /,};"; r=1; }
	return $r
}

scenario_f() {
	local r=0 d2=$d/hv2 i
	mkdir -p "$d2"
	# The underlay: hv1 is 192.168.50.1 (its encap-ip), hv2 .2.
	ip netns add hv2 && ip link add ul0 type veth peer name ul1 netns hv2 &&
		ip addr add 192.168.50.1/24 dev ul0 && ip link set ul0 mtu 1600 up &&
		ip -n hv2 addr add 192.168.50.2/24 dev ul1 && ip -n hv2 link set ul1 mtu 1600 up &&
		ip -n hv2 link set lo up || { detail+="underlay;"; return 1; }
	ovsdb-tool create "$d2/conf.db" /usr/share/openvswitch/vswitch.ovsschema &&
		in_hv2 ovsdb-server "$d2/conf.db" --remote="punix:$d2/db.sock" --pidfile="$d2/ovsdb-server.pid" \
			--log-file="$d2/ovsdb-server.log" --detach && in_hv2 ovs-vsctl --no-wait init ||
		{ detail+="hv2-ovsdb;"; return 1; }
	in_hv2 "$bin" "unix:$d2/db.sock" --pidfile="$d2/ovs-vswitchd.pid" --log-file="$d2/switch.log" --detach \
		>"$d2/switch.out" 2>&1 || { detail+="hv2-switch-did-not-start;"; return 1; }
	in_hv2 ovs-vsctl set open_vswitch . external_ids:system-id=hv2 external_ids:ovn-remote="unix:$d/sb.sock" \
		external_ids:ovn-encap-type=geneve external_ids:ovn-encap-ip=192.168.50.2 external_ids:hostname=hv2 &&
		in_hv2 ovn-controller "unix:$d2/db.sock" --pidfile="$d2/ovn-controller.pid" \
			--log-file="$d2/ovn-controller.log" --detach || { detail+="hv2-ovn-controller;"; return 1; }
	for ((i = 0; i < WAIT; i++)); do
		in_hv2 ovs-ofctl -O OpenFlow15 show br-int >/dev/null 2>&1 && break
		sleep 1
	done
	nb lsp-add ls1 vm4 -- lsp-set-addresses vm4 "00:00:00:01:01:14 10.0.1.14" || return 1
	vm vm4 00:00:00:01:01:14 10.0.1.14/24 10.0.1.1 hv2 || { detail+="vm4;"; return 1; }
	port_up vm4 && sync_hv || return 1
	# Each chassis has a geneve port to the other.
	check hv1-geneve-port ovs-vsctl --bare --columns=options find interface type=geneve \
		options:remote_ip=192.168.50.2 || r=1
	[[ -s $o/check.out ]] || { detail+="hv1-no-geneve-port;"; r=1; }
	check hv2-geneve-port in_hv2 ovs-vsctl --bare --columns=options find interface type=geneve \
		options:remote_ip=192.168.50.1 || r=1
	[[ -s $o/check.out ]] || { detail+="hv2-no-geneve-port;"; r=1; }
	check ping-vm1-vm4 pingc vm1 10.0.1.14 || r=1
	check ping-vm4-vm2 pingc vm4 10.0.1.12 || r=1
	expect_tcp tcp-vm1-vm4 vm1 10.0.1.14 8080 "vm4 10.0.1.11" || r=1
	expect_tcp tcp-vm4-vm1 vm4 10.0.1.11 8080 "vm1 10.0.1.14" || r=1
	if [[ -e /run/netns/vm3 ]]; then # b ran: across the router too
		check ping-vm3-vm4 pingc vm3 10.0.1.14 || r=1
		expect_tcp tcp-vm3-vm4 vm3 10.0.1.14 8080 "vm4 10.0.2.13" || r=1
	fi
	# The datapath flows that carried it: into the tunnel with OVN's
	# geneve option (the logical ports), out of it matching on it.
	mkdir -p "$o/hv2"
	ovs-appctl dpctl/dump-flows >"$o/dp-flows.f" 2>&1
	in_hv2 ovs-appctl dpctl/dump-flows >"$o/hv2/dp-flows.f" 2>&1
	grep -q 'set(tunnel(.*dst=192.168.50.2.*geneve(' "$o/dp-flows.f" || { detail+="hv1-no-geneve-output-flow;"; r=1; }
	grep -q '^recirc_id(0),tunnel(.*src=192.168.50.1.*geneve(' "$o/hv2/dp-flows.f" ||
		{ detail+="hv2-no-geneve-input-flow;"; r=1; }
	return $r
}

scenario_g() {
	local r=0 dh dns a
	nb dhcp-options-create 10.0.1.0/24 &&
		dh=$(nb --bare --columns=_uuid find dhcp_options cidr=10.0.1.0/24) && [[ -n $dh ]] &&
		nb dhcp-options-set-options "$dh" lease_time=3600 router=10.0.1.1 server_id=10.0.1.1 \
			server_mac=00:00:00:00:ff:01 &&
		nb lsp-add ls1 vm5 -- lsp-set-addresses vm5 "00:00:00:01:01:15 10.0.1.15" &&
		nb lsp-set-dhcpv4-options vm5 "$dh" || { detail+="dhcp-options;"; return 1; }
	dns=$(nb create DNS records='{"vm1.ovn.test"="10.0.1.11"}') && nb add logical_switch ls1 dns_records "$dns" ||
		{ detail+="dns-records;"; return 1; }
	# vm5 without an address: udhcpc asks for one.
	ip netns add vm5 && ip link add vm5-o type veth peer name eth0 netns vm5 &&
		ip -n vm5 link set eth0 address 00:00:00:01:01:15 && ip -n vm5 link set eth0 up &&
		ip -n vm5 link set lo up && ip link set vm5-o up &&
		ovs-vsctl add-port br-int vm5-o -- set interface vm5-o external_ids:iface-id=vm5 ||
		{ detail+="vm5;"; return 1; }
	port_up vm5 && sync_hv || return 1
	cat >"$OVS_RUNDIR/udhcpc.sh" <<-'EOS'
		#!/bin/sh
		[ "$1" = bound ] && echo "lease $ip $router"
		exit 0
	EOS
	chmod +x "$OVS_RUNDIR/udhcpc.sh"
	a=$(ip netns exec vm5 busybox udhcpc -i eth0 -f -q -n -t 5 -T 2 -s "$OVS_RUNDIR/udhcpc.sh" 2>&1 | grep '^lease')
	[[ $a == "lease 10.0.1.15 10.0.1.1" ]] || { detail+="dhcp(got:${a//[[:space:]]/_});"; r=1; }
	a=$(ip netns exec vm2 /usr/bin/python3 "$here/tcp.py" dns 10.0.1.11 vm1.ovn.test 2>&1)
	[[ $a == 10.0.1.11 ]] || { detail+="dns(got:${a//[[:space:]]/_});"; r=1; }
	return $r
}

for arg in "$@"; do
	run_switch "${arg%%:*}" "${arg#*:}"
done
cat "$out"/*/results >"$out/results" 2>/dev/null
exit 0
