package openflow

import "github.com/govswitch/govswitch/flow"

// The NSH fields, as ovs-vswitchd names and encodes them: OXM
// experimenter class 0xffff, experimenter NXOXMExperimenter ("NXOXM_NSH"; the ERSPAN fields'
// mechanism, field_erspan.go, carries them),
// fields 1 nsh_flags, 2 nsh_mdtype, 3 nsh_np, 4 nsh_spi (32 bits on the
// wire, 24 of them the SPI), 5 nsh_si, 6-9 nsh_c1..nsh_c4, 10 nsh_ttl.
// nsh_flags and the context words are maskable; nsh_mdtype and nsh_np are
// read-only. All need eth_type 0x894f. OVS takes them in NXM matches too,
// with the same 8-byte experimenter header.
const NXOXMExperimenter uint32 = 0x005ad650

func defNSHFields() {
	exp := func(n uint8) uint32 { return hdr(ClassExperimenter, n) }
	n8 := func(f Field, name string, n uint8, maskable bool, p func(k *flow.Key) *uint8) {
		defInt(f, name, noHeader, exp(n), 1, maskable, both, preNSH, p, 0, 0xff)
		fields[f].exp = NXOXMExperimenter
	}
	n8(FieldNSHFlags, "nsh_flags", 1, true, func(k *flow.Key) *uint8 { return &k.NSH.Flags })
	n8(FieldNSHMDType, "nsh_mdtype", 2, false, func(k *flow.Key) *uint8 { return &k.NSH.MDType })
	n8(FieldNSHNP, "nsh_np", 3, false, func(k *flow.Key) *uint8 { return &k.NSH.NP })
	defInt(FieldNSHSPI, "nsh_spi", noHeader, exp(4), 4, false, both, preNSH,
		func(k *flow.Key) *uint32 { return &k.NSH.SPI }, 0, uint64(flow.NSHSPIMask))
	fields[FieldNSHSPI].exp = NXOXMExperimenter
	fields[FieldNSHSPI].bits = 24
	n8(FieldNSHSI, "nsh_si", 5, false, func(k *flow.Key) *uint8 { return &k.NSH.SI })
	for i := 0; i < 4; i++ {
		i := i
		defInt(FieldNSHC1+Field(i), "nsh_c"+string(rune('1'+i)), noHeader, exp(6+uint8(i)), 4, true, both, preNSH,
			func(k *flow.Key) *uint32 { return &k.NSH.C[i] }, 0, 0xffffffff)
		fields[FieldNSHC1+Field(i)].exp = NXOXMExperimenter
	}
	n8(FieldNSHTTL, "nsh_ttl", 10, false, func(k *flow.Key) *uint8 { return &k.NSH.TTL })
}

// ReadOnly reports whether f may be matched but not set (set_field,
// load, move into it): nsh_mdtype and nsh_np, as in OVS.
func (f Field) ReadOnly() bool { return f == FieldNSHMDType || f == FieldNSHNP }
