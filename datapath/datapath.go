// Package datapath is the switch's view of a datapath: the megaflow cache
// that forwards packets without the switch, and sends the switch the ones
// it cannot (upcalls). The Datapath interface is implemented over the
// Linux openvswitch module by datapath/kernel and in memory by
// datapath/dummy; datapath/datapathtest holds the contract both meet.
//
// The package also holds the odp codecs (odp*.go): flow keys, masks and
// actions as OVS_KEY_ATTR_* and OVS_ACTION_ATTR_* attributes, and their
// ovs-dpctl text.
package datapath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/govswitch/govswitch/flow"
)

// Provider creates, opens and deletes datapaths by name. Names are network
// device names (at most 15 bytes): the kernel creates an internal port of
// that name as port 0 of the datapath.
type Provider interface {
	// Create makes a new datapath. An existing one of the same name fails
	// with an error for which errors.Is(err, unix.EEXIST) (os.ErrExist).
	Create(name string, cfg Config) (Datapath, error)
	// Open attaches to an existing datapath, taking over its upcalls
	// (the upcall PIDs are set to this process's handler sockets). A
	// missing one fails with errors.Is(err, unix.ENOENT) (os.ErrNotExist).
	Open(name string, cfg Config) (Datapath, error)
	// Delete destroys a datapath with its ports and flows; ENOENT when
	// there is none.
	Delete(name string) error
}

// Config is how a Datapath is opened. The zero Config opens a datapath with
// one upcall handler and per-CPU dispatch when the kernel has it.
type Config struct {
	// Handlers is the number of upcall handler sockets; 0 means 1.
	Handlers int
	// NoPerCPU disables per-CPU upcall dispatch even where the kernel has
	// it, forcing per-vport upcall PIDs (to test that path).
	NoPerCPU bool
}

// HandlerCount returns c.Handlers with its default applied.
func (c Config) HandlerCount() int { return max(c.Handlers, 1) }

// Datapath is one open datapath. Its methods are safe for concurrent use,
// except that each Handler is owned by one goroutine.
//
// Errors wrap the errno the datapath reported (errors.Is(err,
// unix.ENOENT), errors.Is(err, unix.EEXIST)); a feature the datapath lacks
// is ErrNotSupported.
type Datapath interface {
	// Name returns the datapath's name.
	Name() string
	// Index returns the datapath's ifindex (dp_ifindex), which tools and
	// the kernel use to name it.
	Index() int
	// Features returns what was negotiated when the datapath was opened.
	Features() Features
	// Stats returns the datapath's counters.
	Stats() (Stats, error)

	// AddVport adds a port and returns it as the datapath stored it (its
	// port number, ifindex and upcall PIDs filled in). A name already in
	// use fails with EEXIST (a netdev vport of a missing device, ENODEV).
	AddVport(spec VportSpec) (Vport, error)
	// DeleteVport removes port portNo; ENODEV if there is none (the
	// kernel's errno for a missing port). Port 0, the datapath's own
	// internal port, cannot be removed (EINVAL).
	DeleteVport(portNo uint32) error
	// Vport returns the port called name; ENODEV if this datapath has
	// none.
	Vport(name string) (Vport, error)
	// Vports returns every port, port 0 first.
	Vports() ([]Vport, error)
	// WatchVports starts delivering port additions and removals (made by
	// anyone, this process included) to fn, from a goroutine of its own,
	// until stop is called. fn must not block for long.
	WatchVports(fn func(VportEvent)) (stop func(), err error)

	// PutFlow installs or changes a flow, per flags. f.Actions is copied;
	// f.Stats is ignored. With PutCreate an existing flow (same UFID, or
	// same key and mask without UFID) fails with EEXIST; with PutModify
	// alone a missing one fails with ENOENT.
	PutFlow(f *Flow, flags PutFlags) error
	// GetFlow fills f with the flow named by ufid (or, when ufid is zero,
	// by the exact key k); ENOENT if there is none. f.Actions is
	// appended to f.Actions[:0], reusing its storage.
	GetFlow(ufid UFID, k *flow.Key, f *Flow) error
	// DeleteFlow removes the flow named by ufid (or by its key k when ufid
	// is zero) and returns its final stats; ENOENT if there is none.
	DeleteFlow(ufid UFID, k *flow.Key) (FlowStats, error)
	// DumpFlows calls fn for every flow. With terse, only UFID and Stats
	// are filled (Flow.Terse is set) and flows installed without a UFID
	// are still listed, with a zero UFID. The *Flow and its Actions are
	// reused between calls: copy what must outlive the call. An error
	// from fn stops the dump and is returned.
	DumpFlows(terse bool, fn func(f *Flow) error) error
	// FlushFlows deletes every flow.
	FlushFlows() error

	// Execute applies actions to packet as if it had arrived with the
	// metadata in md (InPort, Priority, Mark, Tunnel, ...; header fields
	// of md are ignored: the datapath parses the packet itself).
	Execute(packet []byte, md *flow.Key, actions []byte) error
	// Operate runs a batch of puts, deletes and executes, as few system
	// calls as possible, and records each one's outcome in its Err (and
	// Stats, when asked). The returned error is for the batch as a whole
	// (the socket failed); per-op failures are only in ops[i].Err.
	Operate(ops []Op) error

	// Handlers returns the upcall handlers, Config.Handlers of them. Each
	// is meant to be drained by one goroutine.
	Handlers() []Handler

	// Close releases the datapath's sockets, unblocking handlers; the
	// datapath itself, its ports and flows stay (Provider.Delete removes
	// them).
	Close() error
}

// Handler receives upcalls: the packets the datapath sends up to the
// switch, in batches.
type Handler interface {
	// Recv waits for at least one upcall and returns how many it stored in
	// ups, reading at most min(len(ups), len(bufs)) of them, one per
	// buffer. ups[i]'s slices alias bufs[i]: they are valid until that
	// buffer is reused. (Recv may swap elements of bufs to keep that true
	// when it skips a message.) Buffers of 64 KiB hold any upcall of a non-GSO
	// packet; a longer message is dropped and counted as lost. In steady
	// state Recv allocates nothing. After Close it returns an error.
	Recv(ups []Upcall, bufs [][]byte) (int, error)
	// SetReadDeadline sets a deadline for Recv; past it Recv fails with an
	// error for which errors.Is(err, os.ErrDeadlineExceeded).
	SetReadDeadline(t time.Time) error
	// PID returns the netlink port ID the datapath sends this handler's
	// upcalls to (the value for a userspace action's pid).
	PID() uint32
	// Lost returns how many upcalls this handler lost: overflows of its
	// queue and messages too long for the buffer given.
	Lost() uint64
}

// Features is what a datapath negotiated when it was opened.
type Features struct {
	// Raw are the OVS_DP_F_* user features the kernel accepted.
	Raw uint32
	// PerCPUDispatch is set when upcalls are dispatched by CPU to the
	// handlers (OVS_DP_F_DISPATCH_UPCALL_PER_CPU, Linux 5.15+); otherwise
	// each vport names its handlers (OVS_DP_F_VPORT_PIDS).
	PerCPUDispatch bool
	// UFID is set when flows are indexed by unique flow identifiers, and
	// terse dumps work.
	UFID bool
	// CtZone is set when the datapath matches on conntrack zones (a
	// kernel built with CONFIG_NF_CONNTRACK_ZONES; UML's is not).
	CtZone bool
	// CtProbed says the fields below were probed (the kernel datapath);
	// a datapath that leaves it false (dummy) makes no claim, and the
	// switch does not refuse conntrack rules on its account.
	CtProbed bool
	// Recirc: the recirc action and the recirc_id match. CtState, CtMark,
	// CtLabel: matches on those conntrack fields. Conntrack: the ct
	// action. CtNAT: its nat clause. CtClear: the ct_clear action.
	Recirc, CtState, CtMark, CtLabel, Conntrack, CtNAT, CtClear bool
	// Trunc, Clone, CheckPktLen, AddMPLS: the trunc, clone,
	// check_pkt_len and add_mpls actions (probed with the others).
	Trunc, Clone, CheckPktLen, AddMPLS bool
	// Hash: the hash action (OVS_ACTION_ATTR_HASH) with the l4
	// algorithm, which sets the dp_hash a recirculated packet matches on
	// (balance-tcp bonds hash in the kernel with it).
	Hash bool
	// MaxVLANHeaders is how many VLAN headers the datapath matches in a
	// flow key (ovs-vswitchd's "VLAN header stack length"): 2 on Linux
	// 4.10+ (802.1ad), 1 before; at most len(flow.Key{}.VLANs).
	MaxVLANHeaders int
}

// OVS_DP_F_* user features.
const (
	DPFeatureUnaligned       uint32 = 1 << 0
	DPFeatureVportPIDs       uint32 = 1 << 1
	DPFeatureTCRecircSharing uint32 = 1 << 2
	DPFeaturePerCPUDispatch  uint32 = 1 << 3
)

// Stats are a datapath's counters (struct ovs_dp_stats and
// ovs_dp_megaflow_stats).
type Stats struct {
	Hit    uint64 // packets that matched a flow
	Missed uint64 // packets sent up as MISS upcalls
	Lost   uint64 // upcalls that could not be queued to a handler
	Flows  uint64 // flows installed
	// MaskHit counts masks tried over all lookups; MaskHit/(Hit+Missed)
	// is the average number of masks a lookup costs.
	MaskHit uint64
	Masks   uint32 // distinct masks installed
	// CacheHit counts lookups answered by the mask cache.
	CacheHit uint64
}

// VportType is an OVS_VPORT_TYPE_* port type.
type VportType uint32

// Vport types.
const (
	VportNetdev   VportType = 1 // an existing network device
	VportInternal VportType = 2 // a network device the datapath creates
	VportGRE      VportType = 3
	VportVXLAN    VportType = 4
	VportGeneve   VportType = 5
	// VportGTPU and VportBareUDP are the numbers OVS's own header gives
	// the GTP-U and bareudp vport types (OVS_VPORT_TYPE_GTPU 110,
	// OVS_VPORT_TYPE_BAREUDP 111, past the kernel's range): ovs-vswitchd
	// asks the kernel for them where it cannot make the device over
	// rtnetlink, and the upstream module knows neither.
	VportGTPU    VportType = 110
	VportBareUDP VportType = 111
)

func (t VportType) String() string {
	switch t {
	case VportNetdev:
		return "netdev"
	case VportInternal:
		return "internal"
	case VportGRE:
		return "gre"
	case VportVXLAN:
		return "vxlan"
	case VportGeneve:
		return "geneve"
	case VportGTPU:
		return "gtpu"
	case VportBareUDP:
		return "bareudp"
	}
	return fmt.Sprintf("vport-type-%d", uint32(t))
}

// VportSpec says what port to add.
type VportSpec struct {
	Name string
	Type VportType
	// PortNo asks for a port number; 0 lets the datapath choose.
	PortNo uint32
	// DstPort is the UDP port of a VXLAN or Geneve tunnel (0: the
	// kernel's default, 4789 or 6081). Other types ignore it.
	DstPort uint16
}

// Vport is a port as the datapath reports it.
type Vport struct {
	PortNo  uint32
	Type    VportType
	Name    string
	IfIndex uint32
	// UpcallPIDs are the sockets MISS upcalls of this port go to under
	// per-vport dispatch; under per-CPU dispatch the kernel ignores them.
	UpcallPIDs []uint32
	DstPort    uint16 // tunnel UDP port, for VXLAN and Geneve
	Stats      VportStats
}

// VportStats is struct ovs_vport_stats.
type VportStats struct {
	RxPackets, TxPackets uint64
	RxBytes, TxBytes     uint64
	RxErrors, TxErrors   uint64
	RxDropped, TxDropped uint64
}

// VportEventKind says what happened to a port.
type VportEventKind uint8

// Vport events.
const (
	VportAdded VportEventKind = iota + 1
	VportDeleted
	VportChanged
)

// VportEvent is a port notification.
type VportEvent struct {
	Kind VportEventKind
	// Index is the datapath the port belongs to (its Index).
	Index int
	Vport Vport
}

// UFID is a unique flow identifier: the name a switch gives a flow so that
// it can later get, delete and dump it without its key. The zero UFID means
// "none".
type UFID [16]byte

// IsZero reports whether u is the zero UFID.
func (u UFID) IsZero() bool { return u == UFID{} }

// String formats u as ovs-dpctl does, "ufid:" and a UUID. OVS holds a UFID
// as four host-order 32-bit words and prints the UUID from those words, so
// on a little-endian host the text is not the wire bytes in order.
func (u UFID) String() string {
	w := func(i int) uint32 { return binary.NativeEndian.Uint32(u[4*i:]) }
	return fmt.Sprintf("ufid:%08x-%04x-%04x-%04x-%04x%08x",
		w(0), w(1)>>16, w(1)&0xffff, w(2)>>16, w(2)&0xffff, w(3))
}

// FlowStats are a flow's counters.
type FlowStats struct {
	Packets, Bytes uint64
	// Used is when the flow last matched a packet, in the datapath's
	// monotonic milliseconds (the kernel's jiffies as ms); 0 if never.
	Used uint64
	// TCPFlags is the OR of the TCP flags of the packets matched.
	TCPFlags uint16
}

// Flow is a datapath flow: a megaflow (key under mask) and its actions.
type Flow struct {
	UFID UFID
	Key  flow.Key
	// Mask selects the bits of Key the flow matches. The datapath may
	// narrow a put's mask to what it can hold (see FitMask); a get or dump
	// returns the mask installed.
	Mask flow.Mask
	// Actions are OVS_ACTION_ATTR_* attributes (see the odp builders);
	// empty means drop.
	Actions []byte
	Stats   FlowStats
	// Terse is set on a flow from a terse dump: only UFID and Stats are
	// meaningful.
	Terse bool
}

// PutFlags say whether a put may create a flow, modify one, or both.
type PutFlags uint8

// Put flags. Zero means PutCreate|PutModify.
const (
	PutCreate    PutFlags = 1 << iota // may create; EEXIST if the flow exists and PutModify is clear
	PutModify                         // may modify; ENOENT if the flow is missing and PutCreate is clear
	PutZeroStats                      // reset the stats of a modified flow
)

// OpKind says what an Op does.
type OpKind uint8

// Op kinds.
const (
	OpPut OpKind = iota + 1
	OpDelete
	OpExecute
)

// Op is one operation of an Operate batch.
type Op struct {
	Kind OpKind

	// OpPut: the flow and flags as for PutFlow (Flow.Stats ignored).
	// OpDelete: Flow.UFID, or Flow.Key when the UFID is zero.
	// OpExecute: Flow.Key is the packet's metadata as for Execute and
	// Flow.Actions the actions.
	Flow  Flow
	Flags PutFlags
	// Packet is the frame of an OpExecute.
	Packet []byte
	// WantStats asks for the flow's stats in Stats (the stats of a deleted
	// flow; of a modified flow before PutZeroStats). It costs a reply
	// message; leave it off on the hot path.
	WantStats bool

	// Err is the outcome, set by Operate.
	Err error
	// Stats are set by Operate when WantStats.
	Stats FlowStats
}

// UpcallCmd is why a packet came up.
type UpcallCmd uint8

// Upcall commands (OVS_PACKET_CMD_*).
const (
	UpcallMiss   UpcallCmd = 1 // no flow matched
	UpcallAction UpcallCmd = 2 // a userspace action sent it
)

func (c UpcallCmd) String() string {
	switch c {
	case UpcallMiss:
		return "miss"
	case UpcallAction:
		return "action"
	}
	return fmt.Sprintf("upcall-cmd-%d", uint8(c))
}

// Upcall is a packet sent up by the datapath. Its slices alias the buffer it
// was received into and are valid until that buffer is reused.
type Upcall struct {
	Cmd UpcallCmd
	// Key is the packet's flow key as the datapath extracted it, metadata
	// (InPort, ...) included. KeyAttrs is the same key as the datapath
	// sent it (OVS_KEY_ATTR_* attributes).
	Key      flow.Key
	KeyAttrs []byte
	// Packet is the frame; for an action upcall, as modified by the
	// actions before the userspace action.
	Packet []byte
	// Userdata is the userspace action's userdata; nil on a miss.
	Userdata []byte
	// Actions are the flow's actions when the userspace action asked for
	// them; nil otherwise.
	Actions []byte
	// EgressTunnel is the OVS_TUNNEL_KEY_ATTR_* egress tunnel key of an
	// action upcall that asked for it (OVS_PACKET_ATTR_EGRESS_TUN_KEY,
	// which the kernel adds for a userspace action with
	// OVS_USERSPACE_ATTR_EGRESS_TUN_PORT when the packet has tunnel
	// metadata and the port is a tunnel); nil otherwise.
	// EgressTunnelKey is it decoded, HasEgressTunnel whether it came.
	EgressTunnel    []byte
	EgressTunnelKey flow.Tunnel
	HasEgressTunnel bool
	// MRU is the maximum received fragment size of a reassembled packet,
	// 0 if the packet was not reassembled.
	MRU uint16
	// Len is the packet's length before truncation, 0 if not truncated.
	Len uint32
	// Hash is the packet's skb hash with its flags, 0 if none.
	Hash uint64
}

// ErrNotSupported is reported (wrapped) when the datapath lacks a feature.
var ErrNotSupported = errors.New("not supported by the datapath")

// Error is a failed datapath operation: Op says what was done, Name on
// which object, Err why (usually a unix.Errno, or ErrNotSupported).
type Error struct {
	Op   string
	Name string
	Err  error
}

func (e *Error) Error() string {
	if e.Name == "" {
		return "datapath " + e.Op + ": " + e.Err.Error()
	}
	return "datapath " + e.Op + " " + e.Name + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// WrapError returns err as an *Error, or nil when err is nil.
func WrapError(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Name: name, Err: err}
}
