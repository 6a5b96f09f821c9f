package openflow

import "fmt"

// OFPT_ERROR types shared by 1.0 and 1.3 (OFPET_*). The codes of each type
// follow; where 1.0 and 1.3 differ the constants carry 10 or 13.
const (
	ErrTypeHelloFailed   uint16 = 0
	ErrTypeBadRequest    uint16 = 1
	ErrTypeBadAction     uint16 = 2
	Err10TypeFlowModFail uint16 = 3
	Err10TypePortModFail uint16 = 4
	Err10TypeQueueOpFail uint16 = 5

	Err13TypeBadInstruction   uint16 = 3
	Err13TypeBadMatch         uint16 = 4
	Err13TypeFlowModFailed    uint16 = 5
	Err13TypeGroupModFailed   uint16 = 6
	Err13TypePortModFailed    uint16 = 7
	Err13TypeTableModFailed   uint16 = 8
	Err13TypeQueueOpFailed    uint16 = 9
	Err13TypeSwitchConfigFail uint16 = 10
	Err13TypeRoleRequestFail  uint16 = 11
	Err13TypeMeterModFailed   uint16 = 12
	Err13TypeTableFeatFailed  uint16 = 13
	Err13TypeExperimenter     uint16 = 0xffff

	// ErrTypeNiciraVendor (NXET_VENDOR) is how OVS carries OpenFlow 1.1+
	// error codes in OpenFlow 1.0; data starts with a nx_vendor_error.
	ErrTypeNiciraVendor uint16 = 0xb0c2
)

// OFPET_HELLO_FAILED codes.
const (
	HelloFailedIncompatible uint16 = 0
	HelloFailedEPerm        uint16 = 1
)

// OFPET_BAD_REQUEST codes (1.0 names; 1.3 renames STAT to MULTIPART,
// VENDOR to EXPERIMENTER and SUBTYPE to EXP_TYPE, same numbers).
const (
	BadRequestBadVersion    uint16 = 0
	BadRequestBadType       uint16 = 1
	BadRequestBadStat       uint16 = 2 // 1.3: BAD_MULTIPART
	BadRequestBadVendor     uint16 = 3 // 1.3: BAD_EXPERIMENTER
	BadRequestBadSubtype    uint16 = 4 // 1.3: BAD_EXP_TYPE
	BadRequestEPerm         uint16 = 5
	BadRequestBadLen        uint16 = 6
	BadRequestBufferEmpty   uint16 = 7
	BadRequestBufferUnknown uint16 = 8
	BadRequest13BadTableID  uint16 = 9
	BadRequest13IsSlave     uint16 = 10
	BadRequest13BadPort     uint16 = 11
	BadRequest13BadPacket   uint16 = 12
	BadRequest13MPOverflow  uint16 = 13
	// BadRequest15PipelineFieldsOnly is OFPBRC_PIPELINE_FIELDS_ONLY
	// (1.5): a packet-out's match sets a field that is no pipeline field.
	BadRequest15PipelineFieldsOnly uint16 = 17

	// Nicira codes under OFPET_BAD_REQUEST in OpenFlow 1.0 for NXM
	// problems (NXBRC_NXM_*).
	BadRequestNXMInvalid   uint16 = 0x100
	BadRequestNXMBadType   uint16 = 0x101
	BadRequestNXMBadValue  uint16 = 0x102
	BadRequestNXMBadMask   uint16 = 0x103
	BadRequestNXMBadPrereq uint16 = 0x104
	BadRequestNXMDupType   uint16 = 0x105
	// BadRequestNXBadRole (NXBRC_BAD_ROLE) rejects an unknown
	// NXT_ROLE_REQUEST role.
	BadRequestNXBadRole uint16 = 0x201
)

// OFPET_BAD_ACTION codes.
const (
	BadActionBadType         uint16 = 0
	BadActionBadLen          uint16 = 1
	BadActionBadVendor       uint16 = 2 // 1.3: BAD_EXPERIMENTER
	BadActionBadVendorType   uint16 = 3 // 1.3: BAD_EXP_TYPE
	BadActionBadOutPort      uint16 = 4
	BadActionBadArgument     uint16 = 5
	BadActionEPerm           uint16 = 6
	BadActionTooMany         uint16 = 7
	BadActionBadQueue        uint16 = 8
	BadAction13BadOutGroup   uint16 = 9
	BadAction13MatchIncons   uint16 = 10
	BadAction13UnsupOrder    uint16 = 11
	BadAction13BadTag        uint16 = 12
	BadAction13BadSetType    uint16 = 13
	BadAction13BadSetLen     uint16 = 14
	BadAction13BadSetArgment uint16 = 15
)

// OpenFlow 1.0 OFPET_FLOW_MOD_FAILED codes.
const (
	FlowModFailed10AllTablesFull   uint16 = 0
	FlowModFailed10Overlap         uint16 = 1
	FlowModFailed10EPerm           uint16 = 2
	FlowModFailed10BadEmergTimeout uint16 = 3
	FlowModFailed10BadCommand      uint16 = 4
	FlowModFailed10Unsupported     uint16 = 5
)

// OpenFlow 1.0 OFPET_PORT_MOD_FAILED and OFPET_QUEUE_OP_FAILED codes.
const (
	PortModFailedBadPort   uint16 = 0
	PortModFailedBadHWAddr uint16 = 1
	QueueOpFailedBadPort   uint16 = 0
	QueueOpFailedBadQueue  uint16 = 1
	QueueOpFailedEPerm     uint16 = 2
)

// OpenFlow 1.3 OFPET_BAD_INSTRUCTION codes.
const (
	BadInst13UnknownInst       uint16 = 0
	BadInst13UnsupInst         uint16 = 1
	BadInst13BadTableID        uint16 = 2
	BadInst13UnsupMetadata     uint16 = 3
	BadInst13UnsupMetadataMask uint16 = 4
	BadInst13BadExperimenter   uint16 = 5
	BadInst13BadExpType        uint16 = 6
	BadInst13BadLen            uint16 = 7
	BadInst13EPerm             uint16 = 8
)

// OpenFlow 1.3 OFPET_BAD_MATCH codes.
const (
	BadMatch13BadType       uint16 = 0
	BadMatch13BadLen        uint16 = 1
	BadMatch13BadTag        uint16 = 2
	BadMatch13BadDLAddrMask uint16 = 3
	BadMatch13BadNWAddrMask uint16 = 4
	BadMatch13BadWildcards  uint16 = 5
	BadMatch13BadField      uint16 = 6
	BadMatch13BadValue      uint16 = 7
	BadMatch13BadMask       uint16 = 8
	BadMatch13BadPrereq     uint16 = 9
	BadMatch13DupField      uint16 = 10
	BadMatch13EPerm         uint16 = 11
)

// OpenFlow 1.3 OFPET_FLOW_MOD_FAILED codes.
const (
	FlowModFailed13Unknown    uint16 = 0
	FlowModFailed13TableFull  uint16 = 1
	FlowModFailed13BadTableID uint16 = 2
	FlowModFailed13Overlap    uint16 = 3
	FlowModFailed13EPerm      uint16 = 4
	FlowModFailed13BadTimeout uint16 = 5
	FlowModFailed13BadCommand uint16 = 6
	FlowModFailed13BadFlags   uint16 = 7
)

// OpenFlow 1.3 codes of the remaining error types.
const (
	PortModFailed13BadPort      uint16 = 0
	PortModFailed13BadHWAddr    uint16 = 1
	PortModFailed13BadConfig    uint16 = 2
	PortModFailed13BadAdvertise uint16 = 3
	PortModFailed13EPerm        uint16 = 4

	TableModFailed13BadTable  uint16 = 0
	TableModFailed13BadConfig uint16 = 1
	TableModFailed13EPerm     uint16 = 2

	SwitchConfigFailed13BadFlags uint16 = 0
	SwitchConfigFailed13BadLen   uint16 = 1
	SwitchConfigFailed13EPerm    uint16 = 2

	RoleRequestFailed13Stale   uint16 = 0
	RoleRequestFailed13Unsup   uint16 = 1
	RoleRequestFailed13BadRole uint16 = 2

	GroupModFailed13InvalidGroup uint16 = 1
	GroupModFailed13UnknownGroup uint16 = 8
	GroupModFailed13BadType      uint16 = 10
	GroupModFailed13BadCommand   uint16 = 11

	MeterModFailed13Unknown      uint16 = 0
	MeterModFailed13InvalidMeter uint16 = 2
	MeterModFailed13UnknownMeter uint16 = 3
	MeterModFailed13BadCommand   uint16 = 4

	TableFeaturesFailed13BadTable    uint16 = 0
	TableFeaturesFailed13BadMetadata uint16 = 1
	TableFeaturesFailed13BadType     uint16 = 2
	TableFeaturesFailed13BadLen      uint16 = 3
	TableFeaturesFailed13BadArgument uint16 = 4
	TableFeaturesFailed13EPerm       uint16 = 5
)

// Error is a problem with a peer's message that the peer should be told
// about: Type and Code are the OFPT_ERROR type and code in Version's
// numbering. Err is the codec's category (ErrBadLength, ErrUnsupported, …)
// and may be nil.
//
// Experimenter is the experimenter id of a 1.3+ experimenter error (Type
// Err13TypeExperimenter, Code the exp_type).
type Error struct {
	Version      uint8
	Type         uint16
	Code         uint16
	Experimenter uint32
	Err          error
	Detail       string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("openflow %s: error type %d code %d", versionName(e.Version), e.Type, e.Code)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Reply builds the OFPT_ERROR message that answers the offending message
// req (its first 64 bytes are quoted, as the specs ask) with e's type and
// code, in e's version and with req's xid. req may be nil.
func (e *Error) Reply(req []byte) *ErrorMsg {
	var xid uint32
	if len(req) >= HeaderLen {
		xid = u32(req[4:])
	}
	if len(req) > 64 {
		req = req[:64]
	}
	if e.Version < Version13 && e.Experimenter != 0 {
		// A vendor's error in OpenFlow 1.0, as OVS sends it: NXET_VENDOR
		// / NXVC_VENDOR_ERROR, then nx_vendor_error (vendor, type, code)
		// before the quoted request.
		data := be16(be16(be32(make([]byte, 0, 8+len(req)), e.Experimenter), e.Type), e.Code)
		return &ErrorMsg{Envelope: Envelope{Version: e.Version, Xid: xid}, Type: ErrTypeNiciraVendor,
			Data: append(data, req...)}
	}
	return &ErrorMsg{Envelope: Envelope{Version: e.Version, Xid: xid}, Type: e.Type, Code: e.Code,
		Experimenter: e.Experimenter, Data: req}
}

func versionName(v uint8) string {
	switch v {
	case Version10:
		return "1.0"
	case Version11:
		return "1.1"
	case Version12:
		return "1.2"
	case Version13:
		return "1.3"
	case Version14:
		return "1.4"
	case Version15:
		return "1.5"
	}
	return fmt.Sprintf("version 0x%02x", v)
}

// kind names a problem independently of the version; errOf maps it to the
// version's type and code.
type kind uint8

const (
	kBadType kind = iota
	kBadLen
	kBadStat
	kBadVendor
	kBadSubtype
	kActBadType
	kActBadLen
	kActBadVendor
	kActBadVendorType
	kActBadArgument
	kActBadSetType
	kActBadSetLen
	kInstUnknown
	kInstBadLen
	kInstDup
	kMatchBadType
	kMatchBadLen
	kMatchBadField
	kMatchBadValue
	kMatchBadMask
	kMatchBadPrereq
	kMatchDupField
	kFlowModBadCommand
	kBadVersion
)

// codes10 and codes13 give (type, code) per kind.
var codes10 = [...][2]uint16{
	kBadType:           {ErrTypeBadRequest, BadRequestBadType},
	kBadLen:            {ErrTypeBadRequest, BadRequestBadLen},
	kBadStat:           {ErrTypeBadRequest, BadRequestBadStat},
	kBadVendor:         {ErrTypeBadRequest, BadRequestBadVendor},
	kBadSubtype:        {ErrTypeBadRequest, BadRequestBadSubtype},
	kActBadType:        {ErrTypeBadAction, BadActionBadType},
	kActBadLen:         {ErrTypeBadAction, BadActionBadLen},
	kActBadVendor:      {ErrTypeBadAction, BadActionBadVendor},
	kActBadVendorType:  {ErrTypeBadAction, BadActionBadVendorType},
	kActBadArgument:    {ErrTypeBadAction, BadActionBadArgument},
	kActBadSetType:     {ErrTypeBadAction, BadActionBadType},
	kActBadSetLen:      {ErrTypeBadAction, BadActionBadLen},
	kInstUnknown:       {ErrTypeBadRequest, BadRequestBadType},
	kInstBadLen:        {ErrTypeBadRequest, BadRequestBadLen},
	kInstDup:           {ErrTypeBadRequest, BadRequestBadType},
	kMatchBadType:      {ErrTypeBadRequest, BadRequestNXMInvalid},
	kMatchBadLen:       {ErrTypeBadRequest, BadRequestNXMInvalid},
	kMatchBadField:     {ErrTypeBadRequest, BadRequestNXMBadType},
	kMatchBadValue:     {ErrTypeBadRequest, BadRequestNXMBadValue},
	kMatchBadMask:      {ErrTypeBadRequest, BadRequestNXMBadMask},
	kMatchBadPrereq:    {ErrTypeBadRequest, BadRequestNXMBadPrereq},
	kMatchDupField:     {ErrTypeBadRequest, BadRequestNXMDupType},
	kFlowModBadCommand: {Err10TypeFlowModFail, FlowModFailed10BadCommand},
	kBadVersion:        {ErrTypeBadRequest, BadRequestBadVersion},
}

var codes13 = [...][2]uint16{
	kBadType:           {ErrTypeBadRequest, BadRequestBadType},
	kBadLen:            {ErrTypeBadRequest, BadRequestBadLen},
	kBadStat:           {ErrTypeBadRequest, BadRequestBadStat},
	kBadVendor:         {ErrTypeBadRequest, BadRequestBadVendor},
	kBadSubtype:        {ErrTypeBadRequest, BadRequestBadSubtype},
	kActBadType:        {ErrTypeBadAction, BadActionBadType},
	kActBadLen:         {ErrTypeBadAction, BadActionBadLen},
	kActBadVendor:      {ErrTypeBadAction, BadActionBadVendor},
	kActBadVendorType:  {ErrTypeBadAction, BadActionBadVendorType},
	kActBadArgument:    {ErrTypeBadAction, BadActionBadArgument},
	kActBadSetType:     {ErrTypeBadAction, BadAction13BadSetType},
	kActBadSetLen:      {ErrTypeBadAction, BadAction13BadSetLen},
	kInstUnknown:       {Err13TypeBadInstruction, BadInst13UnknownInst},
	kInstBadLen:        {Err13TypeBadInstruction, BadInst13BadLen},
	kInstDup:           {Err13TypeBadInstruction, BadInst13UnsupInst},
	kMatchBadType:      {Err13TypeBadMatch, BadMatch13BadType},
	kMatchBadLen:       {Err13TypeBadMatch, BadMatch13BadLen},
	kMatchBadField:     {Err13TypeBadMatch, BadMatch13BadField},
	kMatchBadValue:     {Err13TypeBadMatch, BadMatch13BadValue},
	kMatchBadMask:      {Err13TypeBadMatch, BadMatch13BadMask},
	kMatchBadPrereq:    {Err13TypeBadMatch, BadMatch13BadPrereq},
	kMatchDupField:     {Err13TypeBadMatch, BadMatch13DupField},
	kFlowModBadCommand: {Err13TypeFlowModFailed, FlowModFailed13BadCommand},
	kBadVersion:        {ErrTypeBadRequest, BadRequestBadVersion},
}

// errOf builds the *Error for k in version v. Categories: length problems
// wrap ErrBadLength, everything else ErrUnsupported.
func errOf(v uint8, k kind, format string, args ...any) *Error {
	tc := codes10[k]
	switch {
	case v >= Version12:
		tc = codes13[k] // 1.2 numbers every code the codec emits as 1.3 does
	case v == Version11:
		tc = codes11[k]
	}
	var cat error = ErrUnsupported
	switch k {
	case kBadLen, kActBadLen, kInstBadLen, kMatchBadLen, kActBadSetLen:
		cat = ErrBadLength
	case kBadVersion:
		cat = ErrBadVersion
	}
	return &Error{Version: v, Type: tc[0], Code: tc[1], Err: cat, Detail: fmt.Sprintf(format, args...)}
}

func badLen(v uint8, what string, have, want int) *Error {
	return errOf(v, kBadLen, "%s: %d bytes, want %d", what, have, want)
}
