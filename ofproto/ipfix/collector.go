package ipfix

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Header is an IPFIX message header.
type Header struct {
	Length     uint16
	ExportTime uint32
	Seq        uint32
	Domain     uint32
}

// Field is one field of a decoded data record.
type Field struct {
	Element
	Value []byte
}

// Record is a decoded data record.
type Record struct {
	Header   Header
	Template uint16
	Fields   []Field
}

// Get returns the value of the first field of element e; ok is false
// when the record has none. Interface names appear twice in an egress
// record: GetN returns the nth.
func (r *Record) Get(e Element) (v []byte, ok bool) { return r.GetN(e, 0) }

// GetN returns the value of the nth (from 0) field of element e.
func (r *Record) GetN(e Element, n int) (v []byte, ok bool) {
	for _, f := range r.Fields {
		if f.ID == e.ID && f.Enterprise == e.Enterprise {
			if n == 0 {
				return f.Value, true
			}
			n--
		}
	}
	return nil, false
}

// Uint returns the value of element e as an unsigned integer (0 when the
// record lacks it or it is longer than 8 bytes).
func (r *Record) Uint(e Element) uint64 {
	v, ok := r.Get(e)
	if !ok || len(v) > 8 {
		return 0
	}
	var x uint64
	for _, c := range v {
		x = x<<8 | uint64(c)
	}
	return x
}

// Collector decodes IPFIX messages, remembering the templates each
// observation domain defined. The zero value is ready to use; it is not
// safe for concurrent use.
type Collector struct {
	// Templates maps an observation domain and template id to the
	// template's fields (options templates included, scope fields
	// first).
	Templates map[TemplateKey][]Element
	// TemplateSets are the raw template sets seen, in order (for
	// comparing exporters byte for byte).
	TemplateSets [][]byte
}

// TemplateKey names a template.
type TemplateKey struct {
	Domain uint32
	ID     uint16
}

// ErrNoTemplate is returned (wrapped) for a data set whose template the
// collector has not seen; the rest of the message is still decoded.
var ErrNoTemplate = errors.New("ipfix: data set of an unknown template")

// Decode reads one message: it learns its templates and returns its data
// records, whose field values alias b.
func (c *Collector) Decode(b []byte) ([]Record, error) {
	if c.Templates == nil {
		c.Templates = map[TemplateKey][]Element{}
	}
	if len(b) < HeaderLen {
		return nil, errors.New("ipfix: message shorter than its header")
	}
	if v := binary.BigEndian.Uint16(b); v != Version {
		return nil, fmt.Errorf("ipfix: version %d, want %d", v, Version)
	}
	h := Header{Length: binary.BigEndian.Uint16(b[2:]), ExportTime: binary.BigEndian.Uint32(b[4:]),
		Seq: binary.BigEndian.Uint32(b[8:]), Domain: binary.BigEndian.Uint32(b[12:])}
	if int(h.Length) != len(b) {
		return nil, fmt.Errorf("ipfix: header says %d bytes, message has %d", h.Length, len(b))
	}
	var recs []Record
	var missing error
	for p := b[HeaderLen:]; len(p) > 0; {
		if len(p) < SetHeaderLen {
			return recs, errors.New("ipfix: truncated set header")
		}
		id, n := binary.BigEndian.Uint16(p), int(binary.BigEndian.Uint16(p[2:]))
		if n < SetHeaderLen || n > len(p) {
			return recs, fmt.Errorf("ipfix: set %d of length %d in %d bytes", id, n, len(p))
		}
		body := p[SetHeaderLen:n]
		p = p[n:]
		switch {
		case id == SetIDTemplate || id == SetIDOptionsTemplate:
			c.TemplateSets = append(c.TemplateSets, append([]byte(nil), b[len(b)-len(p)-n:len(b)-len(p)]...))
			if err := c.templates(h.Domain, id == SetIDOptionsTemplate, body); err != nil {
				return recs, err
			}
		case id >= TemplateIDMin:
			t, ok := c.Templates[TemplateKey{h.Domain, id}]
			if !ok {
				missing = fmt.Errorf("%w: %d in domain %d", ErrNoTemplate, id, h.Domain)
				continue
			}
			rs, err := dataRecords(h, id, t, body)
			recs = append(recs, rs...)
			if err != nil {
				return recs, err
			}
		default:
			return recs, fmt.Errorf("ipfix: reserved set id %d", id)
		}
	}
	return recs, missing
}

func (c *Collector) templates(domain uint32, options bool, b []byte) error {
	hdr := 4
	if options {
		hdr = 6
	}
	for len(b) >= hdr {
		id, n := binary.BigEndian.Uint16(b), int(binary.BigEndian.Uint16(b[2:]))
		b = b[hdr:]
		if id < TemplateIDMin {
			return fmt.Errorf("ipfix: template id %d", id)
		}
		fields := make([]Element, 0, min(n, len(b)/4))
		for i := 0; i < n; i++ {
			if len(b) < 4 {
				return fmt.Errorf("ipfix: template %d truncated", id)
			}
			e := Element{ID: binary.BigEndian.Uint16(b), Len: binary.BigEndian.Uint16(b[2:])}
			b = b[4:]
			if e.ID&0x8000 != 0 {
				if len(b) < 4 {
					return fmt.Errorf("ipfix: template %d truncated", id)
				}
				e.Enterprise = binary.BigEndian.Uint32(b)
				b = b[4:]
			}
			fields = append(fields, e)
		}
		c.Templates[TemplateKey{domain, id}] = fields
	}
	return nil // what remains is padding
}

func dataRecords(h Header, id uint16, t []Element, b []byte) ([]Record, error) {
	var recs []Record
	minLen := 0
	for _, e := range t {
		if e.Len == VarLen {
			minLen++
		} else {
			minLen += int(e.Len)
		}
	}
	for len(b) > 0 && len(b) >= minLen && minLen > 0 {
		r := Record{Header: h, Template: id, Fields: make([]Field, 0, len(t))}
		for _, e := range t {
			n := int(e.Len)
			if e.Len == VarLen {
				if len(b) < 1 {
					return recs, errors.New("ipfix: truncated variable-length field")
				}
				n, b = int(b[0]), b[1:]
				if n == 255 {
					if len(b) < 2 {
						return recs, errors.New("ipfix: truncated variable-length field")
					}
					n, b = int(binary.BigEndian.Uint16(b)), b[2:]
				}
			}
			if len(b) < n {
				return recs, fmt.Errorf("ipfix: record of template %d truncated", id)
			}
			r.Fields = append(r.Fields, Field{Element: e, Value: b[:n:n]})
			b = b[n:]
		}
		recs = append(recs, r)
	}
	return recs, nil // what remains is padding
}
