package ofproto

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govswitch/govswitch/flow"
)

// NORMAL's view of a frame's VLAN headers, as ofproto-dpif-xlate's struct
// xvlan: up to two tags, outermost first, by TPID, VID and PCP. The input
// port's mode maps the tags the frame came with to the bridge's internal
// ones (a dot1q-tunnel port pushes its S-VLAN over them), MAC learning and
// flooding go by the internal outer VID, and each output port's mode maps
// the internal tags to the ones the frame leaves with.

// xvlanTag is one tag: TPID 0 means none was there (an internal tag
// pushed for an untagged frame takes 0x8100 when written out); PCP is the
// TCI's priority bits in place (TCI & VLANPCPMask).
type xvlanTag struct{ tpid, vid, pcp uint16 }

type xvlan [2]xvlanTag

// extractXVLAN reads the tags of f (xvlan_extract): it stops at the first
// slot without a present tag.
func extractXVLAN(f *flow.Key) xvlan {
	var x xvlan
	for i := range f.VLANs {
		t := f.VLANs[i]
		if t.TCI&flow.VLANPresent == 0 || t.TPID != flow.EthTypeVLAN && t.TPID != flow.EthTypeQinQ {
			break
		}
		x[i] = xvlanTag{tpid: t.TPID, vid: t.TCI & flow.VLANVIDMask, pcp: t.TCI & flow.VLANPCPMask}
	}
	return x
}

// headers writes x as a frame's tags (xvlan_put without priority tags): a
// tag with VID and PCP zero is no tag, and the tags left are packed
// outermost first.
func (x xvlan) headers() [2]flow.VLAN { return x.headersTagged(false) }

// headersTagged is headers, keeping with always (priority-tags=always) a
// tag of VID and PCP zero that has a TPID, as OVS's xvlan_put does.
func (x xvlan) headersTagged(always bool) [2]flow.VLAN {
	var vs [2]flow.VLAN
	n := 0
	for _, t := range x {
		if t.vid == 0 && t.pcp == 0 && !(always && t.tpid != 0) {
			continue
		}
		tpid := t.tpid
		if tpid == 0 {
			tpid = flow.EthTypeVLAN
		}
		vs[n] = flow.VLAN{TPID: tpid, TCI: t.vid | t.pcp | flow.VLANPresent}
		n++
	}
	return vs
}

// xvlanIn returns the frame's internal tags as if it were in VLAN vlan:
// its outer tag, TPID and PCP kept, carrying vlan, over its inner one.
func (c *xctx) xvlanIn(vlan uint16) xvlan {
	in := extractXVLAN(&c.flow)
	return xvlan{{tpid: in[0].tpid, vid: vlan, pcp: in[0].pcp}, in[1]}
}

// SetTunnel sets what a dot1q-tunnel port's other columns say: the
// customer VLANs it admits (Port cvlans; empty admits all) and the TPID of
// the outer tag it pushes (other_config:qinq-ethtype, "802.1q" for 0x8100,
// anything else 802.1ad's 0x88a8). Other modes ignore both, as
// ovs-vswitchd does. It fails on a VLAN ID out of 0-4095.
func (v *PortVLAN) SetTunnel(cvlans []int, qinqEthtype string) error {
	if v.Mode != VLANDot1qTunnel {
		return nil
	}
	v.QinQTPID = flow.EthTypeQinQ
	if qinqEthtype == "802.1q" {
		v.QinQTPID = flow.EthTypeVLAN
	}
	v.CVLANs = nil
	if len(cvlans) == 0 {
		return nil
	}
	s := new(VLANSet)
	for _, c := range cvlans {
		if c < 0 || c > 4095 {
			return fmt.Errorf("cvlan %d is not a VLAN ID (0 to 4095)", c)
		}
		s.Add(uint16(c))
	}
	v.CVLANs = s
	return nil
}

// allowsCVLAN reports whether a dot1q-tunnel port admits customer VLAN
// vid (xbundle_allows_cvlan).
func (v *PortVLAN) allowsCVLAN(vid uint16) bool { return v.CVLANs == nil || v.CVLANs.Has(vid) }

// inputXVLAN maps the tags a frame arrived with on the port to the
// bridge's internal ones (input_vid_is_valid, then
// xvlan_input_translate); ok is false when the port does not take the
// frame.
func (v *PortVLAN) inputXVLAN(in xvlan) (x xvlan, ok bool) {
	vid := in[0].vid
	switch v.Mode {
	case VLANAccess:
		if vid != 0 {
			return x, false
		}
		x[0] = xvlanTag{tpid: in[0].tpid, vid: v.Tag, pcp: in[0].pcp}
		return x, true
	case VLANDot1qTunnel:
		if !v.allowsCVLAN(vid) {
			return x, false
		}
		x[0] = xvlanTag{tpid: v.QinQTPID, vid: v.Tag}
		x[1] = in[0]
		return x, true
	case VLANNativeTagged, VLANNativeUntagged:
		if vid == 0 {
			x = in
			x[0] = xvlanTag{tpid: in[0].tpid, vid: v.Tag, pcp: in[0].pcp}
			return x, true
		}
	}
	return in, v.trunks(vid)
}

// includesX reports whether the port carries a frame with internal tags x
// (xbundle_includes_vlan): an access port only frames of its VLAN with no
// inner tag, a dot1q-tunnel port frames of its S-VLAN whose customer VLAN
// it admits.
func (v *PortVLAN) includesX(x *xvlan) bool {
	switch v.Mode {
	case VLANAccess:
		return x[0].vid == v.Tag && x[1].vid == 0
	case VLANDot1qTunnel:
		return x[0].vid == v.Tag && v.allowsCVLAN(x[1].vid)
	}
	return v.trunks(x[0].vid)
}

// outputXVLAN maps internal tags x to the ones a frame leaves the port
// with (xvlan_output_translate).
func (v *PortVLAN) outputXVLAN(x xvlan) xvlan {
	switch v.Mode {
	case VLANAccess:
		return xvlan{}
	case VLANNativeUntagged:
		if x[0].vid != v.Tag {
			return x
		}
	case VLANDot1qTunnel:
	default:
		return x
	}
	return xvlan{x[1]}
}

// inputRefused logs, rate limited, why a port did not take a frame, in
// ovs-vswitchd's words (input_vid_is_valid's xlate_report_error).
func (v *PortVLAN) inputRefused(port string, vid uint16) {
	if !xlateWarnLimit.allow(time.Now()) {
		return
	}
	var msg string
	switch v.Mode {
	case VLANAccess:
		msg = fmt.Sprintf("dropping VLAN %d tagged packet received on port %s configured as VLAN %d access port", vid, port, v.Tag)
	case VLANDot1qTunnel:
		msg = fmt.Sprintf("dropping VLAN %d packet received on dot1q-tunnel port %s that excludes this VLAN", vid, port)
	default:
		msg = fmt.Sprintf("dropping VLAN %d packet received on port %s not configured for trunking VLAN %d", vid, port, vid)
	}
	xlateLogger().Warn(msg)
}

// xlateLog is the logger of translation's warnings (OVS's
// ofproto_dpif_xlate module); nil means slog.Default().
var xlateLog atomic.Pointer[slog.Logger]

// SetXlateLog sets the logger translation warns on; nil restores
// slog.Default().
func SetXlateLog(l *slog.Logger) { xlateLog.Store(l) }

func xlateLogger() *slog.Logger {
	if l := xlateLog.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// rateLimit is a token bucket as OVS's vlog_rate_limit: rate messages a
// second, burst at once.
type rateLimit struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

// xlateWarnLimit is VLOG_RATE_LIMIT_INIT(1, 5), xlate_report_error's.
var xlateWarnLimit = rateLimit{rate: 1, burst: 5, tokens: 5}

func (r *rateLimit) allow(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.last.IsZero() {
		r.tokens = min(r.burst, r.tokens+now.Sub(r.last).Seconds()*r.rate)
	}
	r.last = now
	if r.tokens < 1 {
		return false
	}
	r.tokens--
	return true
}

// vlanLimit is other_config:vlan-limit: how many VLAN headers translation
// sees (flow_vlan_limit); 0 means as many as the datapath parses (two).
// ovs-vswitchd applies it where it turns a datapath key into a flow
// (odp_flow_key_to_flow's parse_8021q_onward, and flow_extract for
// packets parsed in userspace): tags beyond the limit are payload, so a
// frame with more reads as ethertype 0x8100 or 0x88a8 with nothing
// above. The kernel still parses both tags, so the megaflow is written
// against its key (as odp_flow_key_from_mask limits the mask to the same
// depth): see limitedTranslate.
var vlanLimit atomic.Int32

// SetVLANLimit sets other_config:vlan-limit for every bridge (0: no limit
// below the datapath's; negative is taken as 0). Existing datapath flows
// keep their translation until the revalidators next run.
func SetVLANLimit(n int) {
	if n < 0 {
		n = 0
	}
	if n >= len(flow.Key{}.VLANs) {
		n = 0 // the datapath's own limit
	}
	vlanLimit.Store(int32(n))
}

// VLANLimit returns the limit in force: 0 when it is the datapath's.
func VLANLimit() int { return int(vlanLimit.Load()) }

// limitVLANs cuts k to the VLAN limit: it reports whether k had a tag
// beyond it, and then that tag's TPID is k's ethertype and every field
// above L2 is zero.
func limitVLANs(k *flow.Key) bool {
	n := int(vlanLimit.Load())
	if n == 0 || n >= len(k.VLANs) || k.VLANs[n].TCI&flow.VLANPresent == 0 {
		return false
	}
	k.EthType = k.VLANs[n].TPID
	for i := n; i < len(k.VLANs); i++ {
		k.VLANs[i] = flow.VLAN{}
	}
	k.MPLSLSE = 0
	w := k.Words()
	for i := flow.StageEnd[1]; i < flow.KeyWords; i++ {
		w[i] = 0
	}
	return true
}

// limitedTranslate translates key, which has more tags than the VLAN
// limit, as the limit lets translation see it, and writes the megaflow
// mask against key itself, as the datapath holds it: the tags within the
// limit as translation masked them, the first tag beyond it present with
// its TPID (which translation saw as the ethertype), nothing above it
// but the innermost ethertype, which the datapath requires.
func (x *Xlator) limitedTranslate(key *flow.Key, now time.Time, learn bool, out *Out) {
	k := *key
	limitVLANs(&k)
	x.Translate(&k, now, learn, out)
	n := int(vlanLimit.Load())
	wc := &out.WC
	wc.VLANs[n].TPID = 0xffff
	wc.VLANs[n].TCI |= flow.VLANPresent
	wc.EthType = 0xffff
}
