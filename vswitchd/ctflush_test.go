package vswitchd

import (
	"errors"
	"fmt"
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"golang.org/x/sys/unix"
)

// TestParseCtFlush: dpctl/flush-conntrack's arguments after the DP, as
// OVS's "conntrack - ct flush" test gives them, and ovs-vswitchd 3.1's
// errors for bad ones.
func TestParseCtFlush(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string // zone and match, or the error
	}{
		{"nothing", nil, "<nil> zero"},
		{"zone", []string{"zone=5"}, "5 zero"},
		{"tuple", []string{"ct_nw_src=10.1.1.2,ct_nw_dst=10.1.1.1,ct_nw_proto=17,ct_tp_src=2,ct_tp_dst=1"},
			"<nil> 'ct_nw_src=10.1.1.2,ct_nw_dst=10.1.1.1,ct_tp_src=2,ct_tp_dst=1,ct_nw_proto=17' 'ct_nw_src=0.0.0.0,ct_nw_dst=0.0.0.0,ct_tp_src=0,ct_tp_dst=0'"},
		{"zone and reply only", []string{"zone=5", "", "ct_nw_src=10.1.1.1"},
			"5 'ct_nw_src=0.0.0.0,ct_nw_dst=0.0.0.0,ct_tp_src=0,ct_tp_dst=0,ct_nw_proto=0' 'ct_nw_src=10.1.1.1,ct_nw_dst=0.0.0.0,ct_tp_src=0,ct_tp_dst=0'"},
		{"bad zone", []string{"zone=65536"}, "failed to parse zone (Invalid argument)"},
		{"zone not first", []string{"ct_nw_proto=17", "zone=5"}, "invalid conntrack tuple field: zone (Invalid argument)"},
		{"too many", []string{"ct_nw_proto=17", "", "x=1"}, "invalid arguments (Invalid argument)"},
		{"bad tuple", []string{"ct_tp_src=1"}, "port is set without protocol (Invalid argument)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			zone, m, err := parseCtFlush(c.args)
			got := ""
			switch {
			case err != nil:
				got = err.Error()
			case m.IsZero():
				got = fmt.Sprintf("%v zero", zoneText(zone))
			default:
				got = fmt.Sprintf("%v %s", zoneText(zone), m.String())
			}
			if got != c.want {
				t.Errorf("%q\nwant %q", got, c.want)
			}
		})
	}
}

func zoneText(z *uint16) string {
	if z == nil {
		return "<nil>"
	}
	return fmt.Sprint(*z)
}

func TestErrnoText(t *testing.T) {
	if got := datapath.ErrnoText(fmt.Errorf("conntrack: %w", unix.ENOENT)); got != "No such file or directory" {
		t.Errorf("ENOENT: %q", got)
	}
	if got := datapath.ErrnoText(errors.New("plain")); got != "plain" {
		t.Errorf("plain: %q", got)
	}
}
