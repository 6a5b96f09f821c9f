package ovsdb

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// QoSConfig is a port's QoS row as govswitchd applies it, one of the
// types ovs-vswitchd 3.1 runs on Linux (QoSTypes). linux-htb and
// linux-hfsc are a queueing discipline with a root rate and queues (OVS's
// other_config keys, rates in bit/s, burst in bits; hfsc, as OVS's, reads
// only the rates); a zero MaxRate means the device's own speed, and queue
// 0 is there even when the row has none, as ovs-vswitchd configures it
// with no settings then. linux-sfq, linux-codel, linux-fq_codel and
// linux-netem are a classless qdisc whose settings are Params (the
// type's other_config keys that OVS reads, as numbers; a key left out is
// not in Params) and that has no queues: ovs-vswitchd refuses each queue
// of theirs, and so they keep none. linux-noop leaves the device's qdisc
// alone. Other types are refused when Build reads them.
type QoSConfig struct {
	Type    string
	MaxRate uint64
	Queues  map[uint32]QueueConfig
	Params  map[string]uint64
	// Queue0Implicit: the row has no queue 0, so ovs-vswitchd sets it up
	// after the row's queues (which decides where qos/show lists it).
	Queue0Implicit bool
}

// QoSTypes are the QoS types govswitchd runs, with the other_config keys
// each reads into QoSConfig.Params: ovs-vswitchd 3.1's netdev-linux types
// but linux-other (which names a qdisc OVS found, never one to set up).
var QoSTypes = map[string][]string{
	"linux-htb":      nil,
	"linux-hfsc":     nil,
	"linux-sfq":      {"quantum", "perturb"},
	"linux-codel":    {"target", "limit", "interval"},
	"linux-fq_codel": {"target", "limit", "interval", "flows", "quantum"},
	"linux-netem":    {"latency", "limit", "loss"},
	"linux-noop":     nil,
}

// HasQueues reports whether QoS of type t has queues (tc classes).
func HasQueues(t string) bool { return t == "linux-htb" || t == "linux-hfsc" }

// QueueConfig is one Queue row of a linux-htb or linux-hfsc QoS.
type QueueConfig struct {
	MinRate, MaxRate, Burst uint64 // 0: unset
	Priority                uint32
}

// Equal reports whether two configurations are the same.
func (q QoSConfig) Equal(o QoSConfig) bool {
	return q.Type == o.Type && q.Queue0Implicit == o.Queue0Implicit && q.MaxRate == o.MaxRate && maps.Equal(q.Queues, o.Queues) && maps.Equal(q.Params, o.Params)
}

// buildQoS reads the QoS rows of the ports that have one, by interface
// name. QoS types not in QoSTypes are refused, as are queue ids beyond
// their classes' (0-0xfffd), with a Problem; the port keeps no QoS then.
func buildQoS(r *Rows, problems *[]string) map[string]QoSConfig {
	var out map[string]QoSConfig
	for _, pu := range slices.Sorted(maps.Keys(r.Ports)) {
		p := r.Ports[pu]
		if p.QoS == nil {
			continue
		}
		q := r.QoS[*p.QoS]
		if q == nil {
			*problems = append(*problems, fmt.Sprintf("port %s refers to missing QoS row %s", p.Name, *p.QoS))
			continue
		}
		keys, known := QoSTypes[q.Type]
		if !known {
			*problems = append(*problems, fmt.Sprintf("port %s: QoS type %q is not supported by govswitchd (%s are)", p.Name, q.Type,
				strings.Join(slices.Sorted(maps.Keys(QoSTypes)), ", ")))
			continue
		}
		cfg := QoSConfig{Type: q.Type}
		if !HasQueues(q.Type) {
			for _, k := range keys {
				if _, set := q.OtherConfig[k]; set {
					if cfg.Params == nil {
						cfg.Params = map[string]uint64{}
					}
					cfg.Params[k] = parseU64(q.OtherConfig, k, p.Name, problems)
				}
			}
			if len(q.Queues) > 0 && q.Type != "linux-noop" {
				*problems = append(*problems, fmt.Sprintf("port %s: QoS %s has no queues; its %d are ignored, as ovs-vswitchd refuses them",
					p.Name, q.Type, len(q.Queues)))
			}
		} else {
			cfg.MaxRate = parseU64(q.OtherConfig, "max-rate", p.Name, problems)
			cfg.Queues = map[uint32]QueueConfig{0: {}}
			_, has0 := q.Queues[0]
			cfg.Queue0Implicit = !has0
		}
		ok := true
		for _, id := range slices.Sorted(maps.Keys(q.Queues)) {
			if !HasQueues(q.Type) {
				break
			}
			qu := r.Queues[q.Queues[id]]
			if qu == nil {
				*problems = append(*problems, fmt.Sprintf("port %s: QoS queue %d refers to a missing Queue row", p.Name, id))
				ok = false
				continue
			}
			if id < 0 || id >= 0xfffe {
				*problems = append(*problems, fmt.Sprintf("port %s: QoS queue %d is beyond %s's 0-65533", p.Name, id, q.Type))
				ok = false
				continue
			}
			if qu.DSCP != nil {
				*problems = append(*problems, fmt.Sprintf("port %s: QoS queue %d: dscp is not supported by govswitchd", p.Name, id))
			}
			cfg.Queues[uint32(id)] = QueueConfig{
				MinRate: parseU64(qu.OtherConfig, "min-rate", p.Name, problems), MaxRate: parseU64(qu.OtherConfig, "max-rate", p.Name, problems),
				Burst: parseU64(qu.OtherConfig, "burst", p.Name, problems), Priority: uint32(parseU64(qu.OtherConfig, "priority", p.Name, problems)),
			}
		}
		if !ok {
			continue
		}
		// A port of one interface: the QoS is that device's. (Bonds
		// apply it to each member.)
		for _, iu := range p.Interfaces {
			if in := r.Interfaces[iu]; in != nil {
				if out == nil {
					out = map[string]QoSConfig{}
				}
				out[in.Name] = cfg
			}
		}
	}
	return out
}

func parseU64(m map[string]string, key, port string, problems *[]string) uint64 {
	s, ok := m[key]
	if !ok {
		return 0
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		*problems = append(*problems, fmt.Sprintf("port %s: QoS %s=%q is not a number", port, key, s))
		return 0
	}
	return v
}

// Policing is an interface's ingress policer: at most RateKbps kbit/s
// with BurstKb kbit of burst (0: ovs-vswitchd's default of 8000).
type Policing struct {
	RateKbps, BurstKb uint32
}

// buildPolicing reads the interfaces with an ingress_policing_rate, by
// name. The schema keeps both columns non-negative.
func buildPolicing(r *Rows) map[string]Policing {
	var out map[string]Policing
	for _, in := range r.Interfaces {
		if in.IngressPolicingRate <= 0 {
			continue
		}
		if out == nil {
			out = map[string]Policing{}
		}
		out[in.Name] = Policing{RateKbps: uint32(min(in.IngressPolicingRate, 1<<32-1)), BurstKb: uint32(min(max(in.IngressPolicingBurst, 0), 1<<32-1))}
	}
	return out
}
