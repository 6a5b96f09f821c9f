package vswitchd

import (
	"testing"

	"github.com/govswitch/govswitch/datapath"
)

func TestParseZoneLimitArgs(t *testing.T) {
	if z, err := parseZoneLimit("zone=3,limit=7"); err != nil || z != (datapath.ZoneLimit{Zone: 3, Limit: 7}) {
		t.Errorf("zone=3,limit=7: %+v %v", z, err)
	}
	if z, err := parseZoneLimit("limit=0,zone=65535"); err != nil || z != (datapath.ZoneLimit{Zone: 65535}) {
		t.Errorf("limit=0,zone=65535: %+v %v", z, err)
	}
	for arg, want := range map[string]string{
		"zone=3":              "failed to parse zone limit",
		"zone=70000,limit=1":  "failed to parse field zone",
		"zone=1,limit=x":      "failed to parse field limit",
		"zone=1,limit=1,xy=2": "invalid zone limit field: xy",
		"zone=,limit=1":       "field zone missing value",
	} {
		if _, err := parseZoneLimit(arg); err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", arg, err, want)
		}
	}
	if zs, err := parseZoneList("zone=1,2,4"); err != nil || len(zs) != 3 || zs[2] != 4 {
		t.Errorf("zone=1,2,4: %v %v", zs, err)
	}
	for _, arg := range []string{"zones=1", "zone=1,,2", "zone=-1"} {
		if _, err := parseZoneList(arg); err == nil {
			t.Errorf("%s: no error", arg)
		}
	}
	got := formatZoneLimits(10, []datapath.ZoneLimit{{Zone: 0, Limit: 5, Count: 5}, {Zone: 3, Limit: 3}})
	if want := "default limit=10\nzone=0,limit=5,count=5\nzone=3,limit=3,count=0\n"; got != want {
		t.Errorf("format: %q, want %q", got, want)
	}
}
