package datapath

import "github.com/govswitch/govswitch/netlinkio"

// AppendOutput appends an output action to datapath port port.
func AppendOutput(b []byte, port uint32) []byte {
	return netlinkio.AppendU32(b, 1, port)
}
