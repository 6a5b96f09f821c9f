package testbed

import (
	"os"
	"testing"
	"time"
)

func TestParseUptime(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    time.Duration
		wantErr bool
	}{
		{name: "fresh bed", in: "4.39 0.00\n", want: 4390 * time.Millisecond},
		{name: "long running host", in: "864000.12 1700000.50\n", want: 864000*time.Second + 120*time.Millisecond},
		{name: "whole seconds", in: "11 3", want: 11 * time.Second},
		{name: "empty", in: "", wantErr: true},
		{name: "blank", in: " \n", wantErr: true},
		{name: "not a number", in: "up 1.0", wantErr: true},
		{name: "negative", in: "-1.0 0.0", wantErr: true},
		{name: "NaN", in: "NaN 0", wantErr: true},
		{name: "infinite", in: "+Inf 0", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseUptime(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseUptime(%q) error %v, want error %v", tt.in, err, tt.wantErr)
			}
			// Float seconds round; a microsecond is far below what matters.
			if d := got - tt.want; !tt.wantErr && (d > time.Microsecond || d < -time.Microsecond) {
				t.Errorf("parseUptime(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestWaitUptime(t *testing.T) {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Skipf("no /proc/uptime here: %v", err)
	}
	now, err := parseUptime(string(b))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	WaitUptime(t, now/2)
	if waited := time.Since(start); waited > 50*time.Millisecond {
		t.Errorf("WaitUptime for an uptime already passed took %v", waited)
	}
	start = time.Now()
	WaitUptime(t, now+300*time.Millisecond)
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Errorf("WaitUptime(now+300ms) returned after %v", waited)
	}
}
