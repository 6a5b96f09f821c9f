package vswitchd

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// The Prometheus text exposition format, version 0.0.4: per family a
// "# HELP name text" and a "# TYPE name counter|gauge" line, then one
// line per sample, `name{label="value",...} value`, the samples of a
// family together. Only what the daemon serves is implemented: counters
// and gauges with string labels, no timestamps.

// textContentType is the Content-Type scrapers expect for this format.
const textContentType = "text/plain; version=0.0.4; charset=utf-8"

type metricType string

const (
	counterMetric metricType = "counter"
	gaugeMetric   metricType = "gauge"
)

// addFunc adds one sample of a family for the bridge being sampled: its
// value and the values of the family's labels after "bridge", in order.
type addFunc func(v float64, labels ...string)

// metricFamily describes one metric family. labels[0] is "bridge", whose
// value is the bridge's name; sample reports one bridge's samples.
type metricFamily struct {
	name   string
	help   string
	typ    metricType
	labels []string
	sample func(b *bridgeSample, add addFunc)
}

type textSample struct {
	labels []string
	v      float64
}

// writeMetrics appends the exposition of families over bridges to buf
// and returns it. Families come out in the order given, and the samples
// within one sorted by label values, so a scrape is deterministic; a
// family without samples is omitted, HELP and TYPE included.
func writeMetrics(buf []byte, families []metricFamily, bridges []bridgeSample) []byte {
	var samples []textSample
	for i := range families {
		f := &families[i]
		samples = samples[:0]
		for j := range bridges {
			b := &bridges[j]
			f.sample(b, func(v float64, labels ...string) {
				samples = append(samples, textSample{append([]string{b.name}, labels...), v})
			})
		}
		if len(samples) == 0 {
			continue
		}
		slices.SortStableFunc(samples, func(a, b textSample) int { return slices.Compare(a.labels, b.labels) })
		buf = append(buf, "# HELP "...)
		buf = append(buf, f.name...)
		buf = append(buf, ' ')
		buf = appendEscaped(buf, f.help, false)
		buf = append(buf, "\n# TYPE "...)
		buf = append(buf, f.name...)
		buf = append(buf, ' ')
		buf = append(buf, f.typ...)
		buf = append(buf, '\n')
		for _, s := range samples {
			buf = append(buf, f.name...)
			for k, l := range s.labels {
				if k == 0 {
					buf = append(buf, '{')
				} else {
					buf = append(buf, ',')
				}
				buf = append(buf, f.labels[k]...)
				buf = append(buf, `="`...)
				buf = appendEscaped(buf, l, true)
				buf = append(buf, '"')
			}
			if len(s.labels) > 0 {
				buf = append(buf, '}')
			}
			buf = append(buf, ' ')
			buf = appendValue(buf, s.v)
			buf = append(buf, '\n')
		}
	}
	return buf
}

// appendEscaped escapes s as the format asks: backslash and newline in
// HELP text, and the double quote as well in a label value.
func appendEscaped(buf []byte, s string, quote bool) []byte {
	if !strings.ContainsAny(s, "\\\n\"") {
		return append(buf, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			buf = append(buf, `\\`...)
		case c == '\n':
			buf = append(buf, `\n`...)
		case c == '"' && quote:
			buf = append(buf, `\"`...)
		default:
			buf = append(buf, c)
		}
	}
	return buf
}

// appendValue writes a sample value: Go's shortest 'g' form, which
// parses back to the same float64, and the spellings the format uses
// for the non-finite values.
func appendValue(buf []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(buf, "NaN"...)
	case math.IsInf(v, 1):
		return append(buf, "+Inf"...)
	case math.IsInf(v, -1):
		return append(buf, "-Inf"...)
	}
	return strconv.AppendFloat(buf, v, 'g', -1, 64)
}
