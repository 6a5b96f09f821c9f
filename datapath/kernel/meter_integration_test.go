package kernel

import (
	"errors"
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/internal/testbed"
	"golang.org/x/sys/unix"
)

// TestIntegrationMeters: the kernel's ovs_meter family as the datapath
// probes and drives it — features (Linux 6.1: drop bands, one band per
// meter), set, get, replace, delete — and the probe leaves no meter
// behind.
func TestIntegrationMeters(t *testing.T) {
	testbed.Require(t)
	name := uniqueName("gm")
	dp, err := Provider{}.Create(name, datapath.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dp.Close()
		Provider{}.Delete(name)
	})
	m, ok := dp.(datapath.Meterer)
	if !ok {
		t.Fatal("the kernel datapath is no datapath.Meterer")
	}
	f, err := m.MeterFeatures()
	if err != nil {
		t.Fatalf("meter features: %v (the UML and vm kernels, 6.1, have meters)", err)
	}
	t.Logf("meter features: %+v", f)
	if f.MaxMeters == 0 || f.MaxBands == 0 || !f.DropBand {
		t.Errorf("features %+v: want meters with drop bands", f)
	}
	for _, id := range []uint32{probeMeter1, probeMeter2} {
		if _, err := m.GetMeter(id); !errors.Is(err, unix.ENOENT) {
			t.Errorf("probe meter %d left behind: %v", id, err)
		}
	}
	if err := m.SetMeter(&datapath.Meter{ID: 3, Bands: []datapath.MeterBand{{Rate: 10, Burst: 10}}}); err != nil {
		t.Fatal(err)
	}
	st, err := m.GetMeter(3)
	if err != nil {
		t.Fatal(err)
	}
	if st.Packets != 0 || len(st.Bands) != 1 {
		t.Errorf("new meter's stats %+v: want no packets and one band", st)
	}
	if err := m.SetMeter(&datapath.Meter{ID: 3, KBPS: true, Bands: []datapath.MeterBand{{Rate: 1000, Burst: 1000}}}); err != nil {
		t.Fatalf("replace meter 3: %v", err)
	}
	if err := m.DeleteMeter(3); err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetMeter(3); !errors.Is(err, unix.ENOENT) {
		t.Errorf("deleted meter 3: get says %v, want ENOENT", err)
	}
	// Linux 6.1 answers the delete of a missing meter without an error.
	if err := m.DeleteMeter(3); err != nil {
		t.Errorf("delete of a missing meter: %v", err)
	}
}
