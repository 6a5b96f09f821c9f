package vlog

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// A pattern is a parsed vlog line pattern: literal text and conversions,
// with an optional width ("%05N", "%-10c"):
//
//	%A program name        %B syslog priority    %c module
//	%d, %d{FMT} local time %D, %D{FMT} UTC time  %E host name
//	%m message             %N message number     %n newline
//	%p level               %P process id         %r ms since start
//	%t subprogram ("main") %T thread name ("" here: goroutines have none)
//	%% a percent sign
//
// FMT is strftime's (%Y %m %d %H %M %S %e %h %b %T %F %j %z %Z %y %a) plus
// OVS's "#" after %S, one digit of the fraction of a second each.
type pattern struct {
	text  string
	parts []part
}

type part struct {
	conv    byte   // 0 for literal text
	lit     string // the literal, or a time conversion's FMT
	width   int
	left    bool // "-": pad on the right
	zeroPad bool
}

type entry struct {
	l      *Log
	module string
	level  Level
	msg    string
	seq    uint32
	now    time.Time
}

const defaultTimeFormat = "%Y-%m-%d %H:%M:%S.###"

func parsePattern(s string) (*pattern, error) {
	p := &pattern{text: s}
	lit := func(t string) {
		if t != "" {
			p.parts = append(p.parts, part{lit: t})
		}
	}
	for {
		i := strings.IndexByte(s, '%')
		if i < 0 {
			lit(s)
			return p, nil
		}
		lit(s[:i])
		s = s[i+1:]
		var pt part
		if strings.HasPrefix(s, "-") {
			pt.left, s = true, s[1:]
		}
		if strings.HasPrefix(s, "0") {
			pt.zeroPad, s = true, s[1:]
		}
		j := 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j > 0 {
			pt.width, _ = strconv.Atoi(s[:j])
			if pt.width > 1000 {
				return nil, fmt.Errorf("pattern %q: width too large", p.text)
			}
			s = s[j:]
		}
		if s == "" {
			return nil, fmt.Errorf("pattern %q ends in a lone %%", p.text)
		}
		pt.conv, s = s[0], s[1:]
		switch pt.conv {
		case '%':
			lit("%")
			continue
		case 'd', 'D':
			pt.lit = defaultTimeFormat
			if strings.HasPrefix(s, "{") {
				k := strings.IndexByte(s, '}')
				if k < 0 {
					return nil, fmt.Errorf("pattern %q: %%%c{ without }", p.text, pt.conv)
				}
				pt.lit, s = s[1:k], s[k+1:]
			}
		case 'A', 'B', 'c', 'E', 'm', 'N', 'n', 'p', 'P', 'r', 't', 'T':
		default:
			// OVS prints an unknown conversion as itself; so do we,
			// rather than refusing a pattern written for a newer OVS.
			lit("%" + string(pt.conv))
			continue
		}
		p.parts = append(p.parts, pt)
	}
}

func mustPattern(s string) *pattern {
	p, err := parsePattern(s)
	if err != nil {
		panic(err)
	}
	return p
}

var hostname = func() string { h, _ := os.Hostname(); return h }()

func (p *pattern) render(b []byte, e *entry) []byte {
	for i := range p.parts {
		pt := &p.parts[i]
		if pt.conv == 0 {
			b = append(b, pt.lit...)
			continue
		}
		start := len(b)
		switch pt.conv {
		case 'A':
			b = append(b, e.l.program...)
		case 'B':
			b = strconv.AppendInt(b, int64(syslogPriority(e.level)|e.l.facility<<3), 10)
		case 'c':
			b = append(b, e.module...)
		case 'd':
			b = appendTime(b, pt.lit, e.now.Local())
		case 'D':
			b = appendTime(b, pt.lit, e.now.UTC())
		case 'E':
			b = append(b, hostname...)
		case 'm':
			b = append(b, e.msg...)
		case 'N':
			b = strconv.AppendUint(b, uint64(e.seq), 10)
		case 'n':
			b = append(b, '\n')
		case 'p':
			b = append(b, e.level.String()...)
		case 'P':
			b = strconv.AppendInt(b, int64(os.Getpid()), 10)
		case 'r':
			b = strconv.AppendInt(b, e.now.Sub(e.l.start).Milliseconds(), 10)
		case 't':
			b = append(b, "main"...)
		case 'T':
		}
		b = pad(b, start, pt)
	}
	return b
}

// pad widens b[start:] to pt.width.
func pad(b []byte, start int, pt *part) []byte {
	n := pt.width - (len(b) - start)
	if n <= 0 {
		return b
	}
	fill := byte(' ')
	if pt.zeroPad && !pt.left {
		fill = '0'
	}
	for i := 0; i < n; i++ {
		b = append(b, fill)
	}
	if !pt.left {
		copy(b[start+n:], b[start:len(b)-n])
		for i := start; i < start+n; i++ {
			b[i] = fill
		}
	}
	return b
}

var (
	shortDays   = [...]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
	shortMonths = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
)

// appendTime formats t with a strftime subset; "#" right after a seconds
// field adds a digit of the fraction, as OVS's "%S.###" gives
// milliseconds.
func appendTime(b []byte, f string, t time.Time) []byte {
	two := func(b []byte, v int, fill byte) []byte {
		if v < 10 {
			b = append(b, fill)
		}
		return strconv.AppendInt(b, int64(v), 10)
	}
	frac := 0 // digits of the fraction emitted so far
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c == '#' && frac >= 0 {
			// The nth '#' is the nth decimal digit of the second.
			d := t.Nanosecond()
			for k := 0; k < 8-frac; k++ {
				d /= 10
			}
			b = append(b, byte('0'+d%10))
			frac++
			continue
		}
		if c != '%' || i+1 >= len(f) {
			b = append(b, c)
			if c != '.' {
				frac = -1
			}
			continue
		}
		i++
		frac = -1
		switch f[i] {
		case 'Y':
			b = strconv.AppendInt(b, int64(t.Year()), 10)
		case 'y':
			b = two(b, t.Year()%100, '0')
		case 'm':
			b = two(b, int(t.Month()), '0')
		case 'd':
			b = two(b, t.Day(), '0')
		case 'e':
			b = two(b, t.Day(), ' ')
		case 'H':
			b = two(b, t.Hour(), '0')
		case 'M':
			b = two(b, t.Minute(), '0')
		case 'S':
			b = two(b, t.Second(), '0')
			frac = 0
		case 'T':
			b = appendTime(b, "%H:%M:%S", t)
			frac = 0
		case 'F':
			b = appendTime(b, "%Y-%m-%d", t)
		case 'j':
			b = append(b, fmt.Sprintf("%03d", t.YearDay())...)
		case 'h', 'b':
			b = append(b, shortMonths[t.Month()-1]...)
		case 'a':
			b = append(b, shortDays[t.Weekday()]...)
		case 'z':
			b = append(b, t.Format("-0700")...)
		case 'Z':
			b = append(b, t.Format("MST")...)
		case '%':
			b = append(b, '%')
		default:
			b = append(b, '%', f[i])
		}
	}
	return b
}
