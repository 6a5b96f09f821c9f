package ovsdb

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// QoSConfig is a port's QoS row as govswitchd applies it: a linux-htb
// queueing discipline with a root rate and queues (OVS's other_config
// keys, rates in bit/s, burst in bits). A zero MaxRate means the device's
// own speed. Type other than linux-htb is refused when Build reads it.
type QoSConfig struct {
	Type    string
	MaxRate uint64
	Queues  map[uint32]QueueConfig
}

// QueueConfig is one Queue row of a linux-htb QoS.
type QueueConfig struct {
	MinRate, MaxRate, Burst uint64 // 0: unset
	Priority                uint32
}

// Equal reports whether two configurations are the same.
func (q QoSConfig) Equal(o QoSConfig) bool {
	return q.Type == o.Type && q.MaxRate == o.MaxRate && maps.Equal(q.Queues, o.Queues)
}

// buildQoS reads the QoS rows of the ports that have one, by interface
// name. QoS types other than linux-htb are refused, as are queue ids
// beyond HTB's (0-0xfffe), with a Problem; the port keeps no QoS then.
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
		if q.Type != "linux-htb" {
			*problems = append(*problems, fmt.Sprintf("port %s: QoS type %q is not supported by govswitchd (linux-htb is)", p.Name, q.Type))
			continue
		}
		cfg := QoSConfig{Type: q.Type, MaxRate: parseU64(q.OtherConfig, "max-rate", p.Name, problems), Queues: map[uint32]QueueConfig{}}
		ok := true
		for _, id := range slices.Sorted(maps.Keys(q.Queues)) {
			qu := r.Queues[q.Queues[id]]
			if qu == nil {
				*problems = append(*problems, fmt.Sprintf("port %s: QoS queue %d refers to a missing Queue row", p.Name, id))
				ok = false
				continue
			}
			if id < 0 || id >= 0xfffe {
				*problems = append(*problems, fmt.Sprintf("port %s: QoS queue %d is beyond linux-htb's 0-65533", p.Name, id))
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
