package openflow_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/govswitch/govswitch/ofproto/openflow"
)

// A connection loop: reassemble messages, decode them, answer with
// append-style encoders into one reused buffer, and turn decode errors
// into OFPT_ERROR replies.
func Example() {
	var in bytes.Buffer
	for _, m := range []openflow.Msg{
		&openflow.Hello{Envelope: openflow.Envelope{Version: openflow.Version10, Xid: 1}},
		&openflow.BarrierRequest{Envelope: openflow.Envelope{Version: openflow.Version10, Xid: 2}},
	} {
		b, _ := m.Append(nil)
		in.Write(b)
	}
	in.Write([]byte{1, 4, 0, 16, 0, 0, 0, 3, 0, 0, 0x23, 0x20, 0, 0, 0, 99}) // unknown Nicira subtype

	f := openflow.NewFramer(0)
	ours := openflow.VersionBitmap(openflow.Version10, openflow.Version13)
	var out []byte
	for {
		raw, err := f.ReadMsg(&in)
		if err != nil {
			break
		}
		m, err := openflow.Decode(raw)
		var perr *openflow.Error
		var reply openflow.Msg
		switch {
		case errors.As(err, &perr):
			reply = perr.Reply(raw)
		case err != nil:
			return
		default:
			switch m := m.(type) {
			case *openflow.Hello:
				v, ok := openflow.Negotiate(ours, m)
				fmt.Println("negotiated version", v, ok)
			case *openflow.BarrierRequest:
				reply = &openflow.BarrierReply{Envelope: *m.Env()}
			}
		}
		if reply != nil {
			out, _ = reply.Append(out[:0])
			fmt.Printf("reply % x\n", out[:8])
		}
	}
	// Output:
	// negotiated version 1 true
	// reply 01 13 00 08 00 00 00 02
	// reply 01 01 00 1c 00 00 00 03
}
