package vlog

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Logger returns a slog logger whose lines belong to module (registering
// it). Its level checks follow the module's levels as vlog/set changes
// them.
func (l *Log) Logger(module string) *slog.Logger {
	return slog.New(&handler{l: l, m: l.module(module)})
}

// handler renders a slog record as a vlog message: the record's message,
// then its attributes as key=value (values quoted where they have blanks
// or quotes), groups as prefixes ("g.key=value").
type handler struct {
	l     *Log
	m     *module
	attrs string // preformatted " k=v" pairs from WithAttrs
	group string // "g." prefix from WithGroup
}

func (h *handler) Enabled(_ context.Context, lvl slog.Level) bool {
	return h.l.enabled(h.m, FromSlog(lvl))
}

func (h *handler) Handle(_ context.Context, r slog.Record) error {
	lvl := FromSlog(r.Level)
	if !h.l.enabled(h.m, lvl) {
		return nil
	}
	var b strings.Builder
	b.WriteString(r.Message)
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.group, a)
		return true
	})
	h.l.emit(h.m, lvl, b.String())
	return nil
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	var b strings.Builder
	b.WriteString(h.attrs)
	for _, a := range as {
		if a.Key == ModuleKey && h.group == "" {
			n.m = h.l.module(a.Value.String())
			continue
		}
		appendAttr(&b, h.group, a)
	}
	n.attrs = b.String()
	return &n
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	n := *h
	n.group = h.group + name + "."
	return &n
}

func appendAttr(b *strings.Builder, prefix string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range a.Value.Group() {
			appendAttr(b, p, g)
		}
		return
	}
	b.WriteByte(' ')
	b.WriteString(prefix)
	b.WriteString(a.Key)
	b.WriteByte('=')
	var s string
	switch a.Value.Kind() {
	case slog.KindString:
		s = a.Value.String()
	case slog.KindDuration:
		s = a.Value.Duration().String()
	case slog.KindTime:
		s = a.Value.Time().UTC().Format(time.RFC3339Nano)
	case slog.KindAny:
		if err, ok := a.Value.Any().(error); ok {
			s = err.Error()
		} else {
			s = fmt.Sprint(a.Value.Any())
		}
	default:
		s = a.Value.String()
	}
	if needsQuote(s) {
		s = strconv.Quote(s)
	}
	b.WriteString(s)
}

func needsQuote(s string) bool {
	if s == "" {
		return true
	}
	for _, r := range s {
		if unicode.IsSpace(r) || r == '"' || r == '=' || !unicode.IsPrint(r) {
			return true
		}
	}
	return false
}
