package openflow

import "fmt"

// sample(probability=..,collector_set_id=..,obs_domain_id=..,obs_point_id=..
// [,sampling_port=..][,ingress|egress]): NXAST_SAMPLE (24 bytes),
// NXAST_SAMPLE2 (32, with sampling_port) and NXAST_SAMPLE3 (32, with the
// direction too), encoded exactly as ovs-ofctl 3.1 encodes them
// (testdata/ovs-ofctl/sample-actions-*.hex). An ActSample Action carries
// probability (out of 65535) in MaxLen, collector_set_id in Queue,
// obs_domain_id in Group, obs_point_id in Load, sampling_port in Port
// (PortAny for none), the direction (SampleDefault, SampleIngress,
// SampleEgress) in TTL, and in Ofs the subtype it was decoded from (0 for
// one built here): re-encoding keeps that form, as ovs-vswitchd keeps an
// action's raw type.
const (
	NXASTSample  uint16 = 29
	NXASTSample2 uint16 = 38
	NXASTSample3 uint16 = 41
)

// Sample directions (NX_ACTION_SAMPLE_*).
const (
	SampleDefault uint8 = 0
	SampleIngress uint8 = 1
	SampleEgress  uint8 = 2
)

// Sample returns a sample action.
func Sample(probability uint16, collectorSet, domain, point, port uint32, dir uint8) Action {
	return Action{Type: ActSample, MaxLen: probability, Queue: collectorSet, Group: domain, Load: uint64(point),
		Port: port, TTL: dir}
}

// decodeSample decodes a whole NXAST_SAMPLE, SAMPLE2 or SAMPLE3, checked
// as ovs-vswitchd checks it: a probability of 0 is a bad argument, and
// SAMPLE3's direction must be one of the three and its padding zero
// (SAMPLE2 reads neither).
func decodeSample(v uint8, sub uint16, act []byte) (Action, error) {
	want := 32
	if sub == NXASTSample {
		want = 24
	}
	if len(act) != want {
		return Action{}, errOf(v, kActBadLen, "sample: length %d, want %d", len(act), want)
	}
	a := Action{Type: ActSample, Ofs: sub, MaxLen: u16(act[10:]), Queue: u32(act[12:]), Group: u32(act[16:]),
		Load: uint64(u32(act[20:])), Port: PortAny}
	if sub != NXASTSample {
		a.Port = Port10To32(u16(act[24:]))
	}
	if sub == NXASTSample3 {
		for _, c := range act[27:32] {
			if c != 0 {
				return Action{}, errOf(v, kActBadArgument, "sample: nonzero padding")
			}
		}
		if a.TTL = act[26]; a.TTL > SampleEgress {
			return Action{}, errOf(v, kActBadArgument, "sample: direction %d", a.TTL)
		}
	}
	if a.MaxLen == 0 {
		return Action{}, errOf(v, kActBadArgument, "sample: probability 0")
	}
	return a, nil
}

// appendSample encodes a sample action as ovs-vswitchd's encode_SAMPLE:
// SAMPLE3 when it came as one or has a direction, SAMPLE2 when it came
// as one or has a sampling port, SAMPLE otherwise.
func appendSample(b []byte, a *Action) ([]byte, error) {
	p, ok := Port32To10(a.Port)
	if !ok || a.TTL > SampleEgress || a.Load > 0xffffffff {
		return b, fmt.Errorf("openflow: sample to port %d, direction %d, point %d: %w", a.Port, a.TTL, a.Load, ErrUnsupported)
	}
	sub := NXASTSample
	switch {
	case a.Ofs == NXASTSample3 || a.TTL != SampleDefault:
		sub = NXASTSample3
	case a.Ofs == NXASTSample2 || a.Port != PortAny:
		sub = NXASTSample2
	}
	n := uint16(32)
	if sub == NXASTSample {
		n = 24
	}
	b = be32(be32(be32(be16(nxActionHeader(b, n, sub), a.MaxLen), a.Queue), a.Group), uint32(a.Load))
	if sub == NXASTSample {
		return b, nil
	}
	return zeros(append(be16(b, p), a.TTL), 5), nil
}
