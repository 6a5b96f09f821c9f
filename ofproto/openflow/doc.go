// Package openflow is the OpenFlow wire codec of govswitch: framing and
// stream reassembly, OpenFlow 1.0 to 1.5 messages, bundles, and
// the Nicira (NXM) and ONF extensions that ovs-ofctl uses.
//
// Messages are typed structs that embed an Envelope (version and xid).
// Decode turns one whole message into a Msg; (Msg).Append encodes one into a
// caller's buffer and returns the extended buffer, so a connection can reuse
// one buffer for every message it writes. The package does no I/O.
//
// One representation serves every version: matches are a flow.Key and a
// flow.Mask (see Match), actions are a flat []Action, and OpenFlow 1.3
// instructions are an Instructions value whose Apply list also carries the
// OpenFlow 1.0 action list. The version-specific wire forms live at the
// edges, in the Append and Decode functions: OpenFlow 1.4 and 1.5 reuse
// 1.3's structs, their property lists and OXS statistics decoding into the
// same fields (msg14.go), and bundles wrap whole messages (bundle.go).
// OpenFlow 1.1 and 1.2 go through 1.3's code too, which picks their match
// (1.1's fixed ofp11_match, match11.go) and action forms (1.1's per-field
// rewrites, action11.go) by version; msg11.go has what else differs.
//
// Port numbers are 32-bit everywhere in this package, in OpenFlow 1.3
// numbering: the 1.0 reserved ports 0xff00..0xffff are widened to
// 0xffffff00..0xffffffff on decode and narrowed on encode (see Port10To32).
// Key.InPort in a Match holds such an OpenFlow port number; mapping it to a
// datapath port is the ofproto layer's job.
//
// Stats/multipart replies that may outgrow one 64 KiB message (flow dumps,
// port lists, table features) also have AppendParts, which splits them
// into REPLY_MORE-flagged parts.
//
// Decoding never panics, whatever the input: every length is checked
// against the buffer it claims to describe. Decoded messages alias the input
// buffer (packet data, echo payloads, vendor bodies); the caller must not
// reuse that buffer while it still uses the message. Decode errors that the
// peer should hear about are *Error values carrying the OFPT_ERROR type and
// code to send back (see Error.Reply).
package openflow
