package openflow

import (
	"fmt"
	"net/netip"
	"strings"
)

// String formats m as comma-separated name=value[/mask] pairs in the order
// matches are encoded, with ovs-ofctl's field names, for logs and test
// failures. It is not ovs-ofctl's full syntax (no "tcp" shorthands). Mask
// bits no field carries are reported as "unrepresentable".
func (m *Match) String() string {
	var sb strings.Builder
	var covered Match
	for f := FieldNone + 1; f < numFields; f++ {
		d := &fields[f]
		if d.enc&encNXM == 0 && f != FieldInPort || f == FieldNXMInPort || d.alias || !d.touches(&m.Mask) ||
			!prereqOK(d.pre, &m.Key, &m.Mask) || overlaps(&covered.Mask, &d.cover) {
			continue
		}
		covered.Mask.Or(&d.cover)
		if sb.Len() > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(d.name)
		sb.WriteByte('=')
		var vb, mb [16]byte
		if d.bytes != nil {
			v, mk := d.bytes(&m.Key), d.bytes(m.Mask.Key())
			for i := range v {
				vb[i], mb[i] = v[i]&mk[i], mk[i]
			}
			full := true
			for i := range mk {
				full = full && mk[i] == 0xff
			}
			sb.WriteString(formatBytes(vb[:len(v)]))
			if !full {
				sb.WriteString("/" + formatBytes(mb[:len(v)]))
			}
			continue
		}
		v, mk, all := d.get(&m.Key), d.get(m.Mask.Key()), d.get(d.cover.Key())
		if f == FieldInPort {
			sb.WriteString(portName(uint32(v)))
			continue
		}
		if mk == all && decimalField(f) {
			fmt.Fprintf(&sb, "%d", v)
		} else if mk == all {
			fmt.Fprintf(&sb, "%#x", v)
		} else {
			fmt.Fprintf(&sb, "%#x/%#x", v&mk, mk)
		}
	}
	if !covered.Mask.Covers(&m.Mask) {
		if sb.Len() > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString("unrepresentable")
	}
	if sb.Len() == 0 {
		return "any"
	}
	return sb.String()
}

func formatBytes(b []byte) string {
	switch len(b) {
	case 4:
		return netip.AddrFrom4([4]byte(b)).String()
	case 16:
		return netip.AddrFrom16([16]byte(b)).String()
	case 6:
		return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4], b[5])
	}
	return fmt.Sprintf("%x", b)
}

// portName names reserved ports as ovs-ofctl does.
func portName(p uint32) string {
	switch p {
	case PortInPort:
		return "IN_PORT"
	case PortTable:
		return "TABLE"
	case PortNormal:
		return "NORMAL"
	case PortFlood:
		return "FLOOD"
	case PortAll:
		return "ALL"
	case PortController:
		return "CONTROLLER"
	case PortLocal:
		return "LOCAL"
	case PortAny:
		return "ANY"
	}
	return fmt.Sprint(p)
}

// decimalField reports whether ovs-ofctl prints f in decimal (ports,
// protocol numbers, small header fields) rather than hex.
func decimalField(f Field) bool {
	switch f {
	case FieldTCPSrc, FieldTCPDst, FieldUDPSrc, FieldUDPDst, FieldSCTPSrc, FieldSCTPDst,
		FieldICMPv4Type, FieldICMPv4Code, FieldICMPv6Type, FieldICMPv6Code, FieldIPProto, FieldIPTTL,
		FieldIPDSCP, FieldIPTOS, FieldIPECN, FieldARPOp, FieldVLANVID, FieldVLANPCP,
		FieldMPLSLabel, FieldMPLSTC, FieldMPLSBOS, FieldCtZone,
		FieldNSHFlags, FieldNSHTTL, FieldNSHMDType, FieldNSHNP, FieldNSHSI:
		return true
	}
	return false
}
