package openflow

// Reserved OpenFlow port numbers, in the 32-bit numbering this package uses
// everywhere (OpenFlow 1.3's). OpenFlow 1.0 carries the same ports as
// 0xff00..0xffff; Port10To32 and Port32To10 convert.
const (
	PortMax        uint32 = 0xffffff00 // highest ordinary port number + 1
	PortInPort     uint32 = 0xfffffff8 // send back out the input port
	PortTable      uint32 = 0xfffffff9 // packet-out only: run the flow table
	PortNormal     uint32 = 0xfffffffa // the NORMAL L2 switch
	PortFlood      uint32 = 0xfffffffb // all ports but the input one and those with flooding off
	PortAll        uint32 = 0xfffffffc // all ports but the input one
	PortController uint32 = 0xfffffffd // to the controller(s) as a packet-in
	PortLocal      uint32 = 0xfffffffe // the bridge's internal port
	PortAny        uint32 = 0xffffffff // 1.3 OFPP_ANY; 1.0 OFPP_NONE (0xffff)
)

// Port10Max is the first reserved OpenFlow 1.0 port number.
const Port10Max uint16 = 0xff00

// Port10To32 widens an OpenFlow 1.0 port number: reserved ports
// 0xff00..0xffff become 0xffffff00..0xffffffff, others are unchanged.
func Port10To32(p uint16) uint32 {
	if p >= Port10Max {
		return uint32(p) | 0xffff0000
	}
	return uint32(p)
}

// Port32To10 narrows a port number to OpenFlow 1.0. ok is false for a
// number OpenFlow 1.0 cannot carry (0xff00..0xfffffeff).
func Port32To10(p uint32) (uint16, bool) {
	if p < uint32(Port10Max) || p >= PortMax {
		return uint16(p), true
	}
	return 0, false
}

// Buffer id meaning "no buffered packet" (packet-in, packet-out, flow-mod).
const NoBuffer uint32 = 0xffffffff

// Table id meaning "all tables" in stats requests and flow deletes.
const TableAll uint8 = 0xff
