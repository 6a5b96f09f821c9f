package openflow

// codes11 gives (type, code) per kind in OpenFlow 1.1, which numbers its
// error types as 1.3 does but lacks the codes 1.2 added (the set_field,
// match mask, prerequisite and duplicate-field codes, the instruction
// length code). Each of those maps onto the nearest 1.1 code.
var codes11 = [...][2]uint16{
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
	kInstUnknown:       {Err13TypeBadInstruction, BadInst13UnknownInst},
	kInstBadLen:        {ErrTypeBadRequest, BadRequestBadLen},
	kInstDup:           {Err13TypeBadInstruction, BadInst13UnsupInst},
	kMatchBadType:      {Err13TypeBadMatch, BadMatch13BadType},
	kMatchBadLen:       {Err13TypeBadMatch, BadMatch13BadLen},
	kMatchBadField:     {Err13TypeBadMatch, BadMatch13BadField},
	kMatchBadValue:     {Err13TypeBadMatch, BadMatch13BadValue},
	kMatchBadMask:      {Err13TypeBadMatch, BadMatch13BadWildcards},
	kMatchBadPrereq:    {Err13TypeBadMatch, BadMatch13BadField},
	kMatchDupField:     {Err13TypeBadMatch, BadMatch13BadField},
	kFlowModBadCommand: {Err13TypeFlowModFailed, FlowModFailed13BadCommand},
	kBadVersion:        {ErrTypeBadRequest, BadRequestBadVersion},
}
