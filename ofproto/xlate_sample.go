package ofproto

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/netlinkio"
	"github.com/govswitch/govswitch/ofproto/sflow"
)

// sFlow packet sampling, as ovs-vswitchd's compose_sflow_action and
// fix_sflow_action: a translation on a bridge with sFlow begins with a
// datapath sample action (probability UINT32_MAX/sampling; at a rate of 1
// the userspace action alone, as OVS leaves the sample out at 100%) whose
// userspace action sends the packet up as an action upcall carrying the
// sample's context. The context is known only once the translation is
// done (where the packet went), so the userdata is written as a template
// first and filled in at the end. The rest of the actions and the
// megaflow mask are exactly the unsampled translation's.
//
// Userdata of an sFlow sample (16 bytes, a multiple of 4):
//
//	[0]     UserdataSFlow
//	[1]     0
//	[2:4]   the bridge's number on its datapath (Xlator.ID, big-endian)
//	[4:8]   the datapath port of the last output (big-endian)
//	[8:12]  the number of outputs (big-endian): 0 is a drop
//	[12:14] the VLAN TCI the packet leaves with (big-endian), 0 untagged
//	[14:16] 0
//
// OVS's user_action_cookie carries the same facts (the output as sFlow's
// output word, computed at translation); here the datapath port is turned
// into an ifIndex when the sample arrives, so translation does no lookup.
const (
	UserdataSFlow   = 3
	sflowUserdataLn = 16
)

// sflowState is a bridge's running sFlow: its exporter and the datapath
// port → ifIndex map that samples and counters need.
type sflowState struct {
	exp  *sflow.Exporter
	prob uint32
	// ifindex maps a datapath port to its device's ifIndex; refreshed
	// with each counter poll and when a sample meets a port it lacks.
	ifindex atomic.Pointer[map[uint32]uint32]
}

// SFlowUserdata is a decoded sFlow sample userdata.
type SFlowUserdata struct {
	Bridge   uint16
	OutPort  uint32 // datapath port of the last output
	NOutputs uint32
	OutTCI   uint16
}

// ParseSFlowUserdata decodes an sFlow sample's userdata; ok is false for
// anything else.
func ParseSFlowUserdata(b []byte) (u SFlowUserdata, ok bool) {
	if len(b) < sflowUserdataLn || b[0] != UserdataSFlow {
		return u, false
	}
	return SFlowUserdata{Bridge: binary.BigEndian.Uint16(b[2:]), OutPort: binary.BigEndian.Uint32(b[4:]),
		NOutputs: binary.BigEndian.Uint32(b[8:]), OutTCI: binary.BigEndian.Uint16(b[12:])}, true
}

// sflowBegin appends the sample action's template when the bridge runs
// sFlow and returns the userdata's offset in the actions, or -1.
func (c *xctx) sflowBegin() int {
	st := c.x.sflow.Load()
	if st == nil {
		return -1
	}
	pid := c.x.ControllerPID.Load()
	if pid == 0 {
		return -1
	}
	var ud [sflowUserdataLn]byte
	ud[0] = UserdataSFlow
	binary.BigEndian.PutUint16(ud[2:], c.x.ID)
	acts := c.out.Actions
	wrap := st.prob != ^uint32(0)
	var sampleAt, actsAt int
	if wrap {
		acts, sampleAt = netlinkio.BeginNested(acts, uint16(datapath.ActionSample))
		acts = netlinkio.AppendU32(acts, sampleAttrProbability, st.prob)
		acts, actsAt = netlinkio.BeginNested(acts, sampleAttrActions)
	}
	// A userspace action is its header, the pid attribute (8 bytes) and
	// the userdata attribute's header: the userdata starts 16 bytes in.
	at := len(acts) + 16
	acts = datapath.AppendUserspace(acts, pid, ud[:])
	if wrap {
		acts = netlinkio.EndNested(acts, actsAt)
		acts = netlinkio.EndNested(acts, sampleAt)
	}
	c.out.Actions = acts
	return at
}

// The datapath's OVS_SAMPLE_ATTR_* (datapath keeps its own unexported).
const (
	sampleAttrProbability = 1
	sampleAttrActions     = 2
)

// sflowFix fills in the template begun at userdata offset at: the outputs
// the translation emitted after it and the VLAN the packet leaves with.
// A translation that discarded its actions (a drop it did not choose)
// has no template left to fill.
func (c *xctx) sflowFix(at int) {
	acts := c.out.Actions
	if at+sflowUserdataLn > len(acts) || acts[at] != UserdataSFlow {
		return
	}
	var n, last uint32
	it := netlinkio.NewAttrIter(acts[at+sflowUserdataLn:])
	for it.Next() {
		if it.Type() == uint16(datapath.ActionOutput) && len(it.Data()) == 4 {
			n++
			last = binary.NativeEndian.Uint32(it.Data())
		}
	}
	binary.BigEndian.PutUint32(acts[at+4:], last)
	binary.BigEndian.PutUint32(acts[at+8:], n)
	if c.base.VLANs[0].TCI&flow.VLANPresent != 0 {
		binary.BigEndian.PutUint16(acts[at+12:], c.base.VLANs[0].TCI&^flow.VLANPresent)
	}
}

// sflowUpcall hands an sFlow sample to the bridge whose actions took it.
func (u *Udpif) sflowUpcall(up *datapath.Upcall) {
	ud, ok := ParseSFlowUserdata(up.Userdata)
	if !ok {
		return
	}
	var b *Bridge
	switch t := u.x.(type) {
	case *Backer:
		b = t.set.Load().byID[ud.Bridge]
	case *Xlator:
		b = t.bridge
	}
	if b == nil {
		return
	}
	if st := b.X.sflow.Load(); st != nil {
		st.sample(b, up, ud)
	}
}
