package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Usage is the tool's help text.
const Usage = `govbench: flow-setup benchmark, compatible with ovs-benchmark
usage: govbench [OPTIONS] COMMAND
Commands:
  rate      measure TCP connection rate (each attempt is >= 2 new flows)
  latency   measure TCP connection latency
  listen    accept and close connections (the far end of rate/latency)
  help      print this text
Options:
  -r, --remote=IP[:PORT|:MIN-MAX]  connect to this address (default port 6630)
  -l, --local=[IP][:PORT|:MIN-MAX] bind client sockets (rate, latency) or
                                   listen here (listen; default port 6630)
  -s, --sockets=N                  sockets outstanding at once (default 100)
  -b, --batches=N                  latency: batches to run (default 1)
  -c, --max-rate=RATE              rate: at most RATE attempts per second
  -T, --timeout=SECS               rate: stop after SECS seconds
      --order=ovs|both             port cycling: ovs (local port every
                                   attempt, remote when local wraps) or both
                                   (both ports every attempt)
      --json                       print a JSON summary at the end
  -h, --help                       print this text
  -V, --version                    print the version
`

// Version is the tool's version string.
const Version = "govbench (govswitch) 0.1.0"

// Invocation is a parsed command line.
type Invocation struct {
	Command string
	Options Options
	JSON    bool
	Help    bool
	Version bool
}

var shortOpts = map[byte]string{'r': "remote", 'l': "local", 's': "sockets", 'b': "batches",
	'c': "max-rate", 'T': "timeout", 'h': "help", 'V': "version"}

var takesArg = map[string]bool{"remote": true, "local": true, "sockets": true, "batches": true,
	"max-rate": true, "timeout": true, "order": true}

// ParseArgs parses the command line as ovs-benchmark's getopt_long did:
// options may come before or after the command, short options may carry
// their value attached (-s50) or as the next word, long ones after = or as
// the next word.
func ParseArgs(args []string) (Invocation, error) {
	inv := Invocation{Options: Options{Sockets: 100, Batches: 1}}
	var remote, local string
	set := func(name, val string) error {
		var err error
		switch name {
		case "remote":
			remote = val
		case "local":
			local = val
		case "sockets":
			inv.Options.Sockets, err = strconv.Atoi(val)
			if err == nil && (inv.Options.Sockets < 1 || inv.Options.Sockets > MaxSockets) {
				err = fmt.Errorf("must be between 1 and %d", MaxSockets)
			}
		case "batches":
			inv.Options.Batches, err = strconv.Atoi(val)
			if err == nil && inv.Options.Batches < 0 {
				err = fmt.Errorf("must not be negative")
			}
		case "max-rate":
			inv.Options.MaxRate, err = strconv.ParseFloat(val, 64)
			if err == nil && !(inv.Options.MaxRate > 0) {
				err = fmt.Errorf("must be positive")
			}
		case "timeout":
			var s int
			s, err = strconv.Atoi(val)
			if err == nil && s == 0 {
				err = fmt.Errorf("must not be zero")
			}
			inv.Options.Timeout = time.Duration(s) * time.Second
		case "order":
			inv.Options.Order, err = ParseOrder(val)
		case "json":
			inv.JSON = true
		case "help":
			inv.Help = true
		case "version":
			inv.Version = true
		default:
			return fmt.Errorf("unknown option --%s", name)
		}
		if err != nil {
			return fmt.Errorf("--%s %q: %w", name, val, err)
		}
		return nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		var name, val string
		hasVal := false
		switch {
		case a == "--":
			if i+1 < len(args) && inv.Command == "" {
				inv.Command = args[i+1]
			}
			i = len(args)
			continue
		case strings.HasPrefix(a, "--"):
			name, val, hasVal = strings.Cut(a[2:], "=")
		case strings.HasPrefix(a, "-") && len(a) > 1:
			long, ok := shortOpts[a[1]]
			if !ok {
				return inv, fmt.Errorf("unknown option -%c", a[1])
			}
			name = long
			if len(a) > 2 {
				val, hasVal = a[2:], true
			}
		default:
			if inv.Command != "" {
				return inv, fmt.Errorf("unexpected argument %q", a)
			}
			inv.Command = a
			continue
		}
		if takesArg[name] && !hasVal {
			if i+1 >= len(args) {
				return inv, fmt.Errorf("option --%s needs a value", name)
			}
			i++
			val = args[i]
		} else if !takesArg[name] && hasVal {
			return inv, fmt.Errorf("option --%s takes no value", name)
		}
		if err := set(name, val); err != nil {
			return inv, err
		}
	}
	if inv.Help || inv.Version {
		return inv, nil
	}
	var err error
	switch inv.Command {
	case "rate", "latency":
		if remote == "" {
			return inv, fmt.Errorf("%s: -r (--remote) is required", inv.Command)
		}
		if inv.Options.Remote, err = ParseEndpoint(remote, true, DefaultPort); err != nil {
			return inv, fmt.Errorf("--remote: %w", err)
		}
		if local != "" {
			if inv.Options.Local, err = ParseEndpoint(local, false, 0); err != nil {
				return inv, fmt.Errorf("--local: %w", err)
			}
		}
	case "listen":
		if local != "" {
			if inv.Options.Local, err = ParseEndpoint(local, false, DefaultPort); err != nil {
				return inv, fmt.Errorf("--local: %w", err)
			}
		}
	case "help":
		inv.Help = true
	case "":
		return inv, fmt.Errorf("missing command (rate, latency, listen or help)")
	default:
		return inv, fmt.Errorf("unknown command %q", inv.Command)
	}
	return inv, nil
}

// Summary is the --json output.
type Summary struct {
	Command   string  `json:"command"`
	Remote    string  `json:"remote,omitempty"`
	Sockets   int     `json:"sockets"`
	MaxRate   float64 `json:"max_rate,omitempty"`
	ElapsedS  float64 `json:"elapsed_s,omitempty"`
	Completed uint64  `json:"completed,omitempty"`
	OK        uint64  `json:"ok"`
	Failed    uint64  `json:"failed"`
	AvgPerS   float64 `json:"avg_per_s,omitempty"`
	MinMS     *int    `json:"min_ms,omitempty"`
	MaxMS     *int    `json:"max_ms,omitempty"`
	AvgMS     *int    `json:"avg_ms,omitempty"`
	Accepted  uint64  `json:"accepted,omitempty"`
	PortOrder string  `json:"port_order"`
}

// Run executes a parsed invocation, writing the tool's output to out.
func Run(ctx context.Context, inv Invocation, out io.Writer) error {
	if inv.Help {
		_, err := io.WriteString(out, Usage)
		return err
	}
	if inv.Version {
		_, err := fmt.Fprintln(out, Version)
		return err
	}
	o := &inv.Options
	sum := Summary{Command: inv.Command, Sockets: o.Sockets, MaxRate: o.MaxRate, PortOrder: "ovs"}
	if o.Order == OrderBoth {
		sum.PortOrder = "both"
	}
	if o.Remote.IP != nil {
		sum.Remote = o.Remote.String()
	}
	switch inv.Command {
	case "rate":
		r, err := RunRate(ctx, o, out)
		if err != nil {
			return err
		}
		sum.ElapsedS, sum.Completed, sum.OK, sum.Failed, sum.AvgPerS = r.Elapsed.Seconds(), r.Completed, r.OK(), r.Failed, r.Rate()
	case "latency":
		r, err := RunLatency(ctx, o, out)
		if err != nil {
			return err
		}
		avg := r.AvgMS()
		sum.MinMS, sum.MaxMS, sum.AvgMS = &r.MinMS, &r.MaxMS, &avg
		sum.OK, sum.Failed = uint64(r.Attempts-r.Errors), uint64(r.Errors)
	case "listen":
		l, err := Listen(o.Local)
		if err != nil {
			return err
		}
		defer l.Close()
		if err := l.Serve(ctx); err != nil {
			return err
		}
		sum.Accepted = l.Accepted.Load()
	}
	if inv.JSON {
		b, _ := json.Marshal(sum)
		_, err := fmt.Fprintf(out, "%s\n", b)
		return err
	}
	return nil
}
