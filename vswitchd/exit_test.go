package vswitchd

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/govswitch/govswitch/datapath"
)

// TestExitCleanup: exit --cleanup deletes the bridge's datapath before it
// answers; plain exit leaves it for the next start; anything else is
// refused and the daemon keeps running.
func TestExitCleanup(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantErr   string
		wantDP    bool // the datapath exists afterwards
		wantExits bool
	}{
		{name: "plain exit keeps the datapath", wantDP: true, wantExits: true},
		{name: "cleanup deletes it", args: []string{"--cleanup"}, wantDP: false, wantExits: true},
		{name: "unknown option", args: []string{"--clean"}, wantErr: `unknown option "--clean"`, wantDP: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startSwitch(t, nil, t.TempDir())
			defer s.d.Stop()
			_, err := s.d.ctl.Run("exit", tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("exit %v: error %v, want %q", tt.args, err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("exit %v: %v", tt.args, err)
			}
			select {
			case <-s.d.exit:
				if !tt.wantExits {
					t.Error("the daemon was asked to exit")
				}
			default:
				if tt.wantExits {
					t.Error("the daemon was not asked to exit")
				}
			}
			// Checked before Stop: --cleanup must have deleted the
			// datapath by the time it answered.
			dp, err := s.prov.Open("ovs-system", datapath.Config{})
			if got := err == nil; got != tt.wantDP {
				t.Errorf("datapath ovs-system exists: %v (open: %v), want %v", got, err, tt.wantDP)
			}
			if err == nil {
				dp.Close()
			} else if !errors.Is(err, os.ErrNotExist) {
				t.Errorf("open: %v, want ErrNotExist", err)
			}
			if tt.wantDP == false && len(s.d.Bridges()) != 0 {
				t.Errorf("bridges still running after cleanup: %d", len(s.d.Bridges()))
			}
		})
	}
}

// TestNoBridgeAfterCleanup: once exit --cleanup ran, a bridge the
// database asks for does not come up (it would outlive the daemon).
func TestNoBridgeAfterCleanup(t *testing.T) {
	s := startSwitch(t, nil, t.TempDir())
	defer s.d.Stop()
	if err := s.d.Cleanup(); err != nil {
		t.Fatal(err)
	}
	err := s.d.bringUp(bridgeSetup{Name: "br1"})
	if !errors.Is(err, errExiting) {
		t.Fatalf("bringUp after Cleanup: %v, want errExiting", err)
	}
	if _, err := s.prov.Open("ovs-system", datapath.Config{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a datapath was created for br1: %v", err)
	}
}
