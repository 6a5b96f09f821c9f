package vswitchd

import (
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// policies returns the scheduling policy of every thread of the process.
func policies(t *testing.T) map[int]uint32 {
	t.Helper()
	tids, err := threads()
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]uint32{}
	for _, tid := range tids {
		if a, err := unix.SchedGetAttr(tid, 0); err == nil {
			out[tid] = a.Policy
		}
	}
	return out
}

func TestSetScheduling(t *testing.T) {
	t.Cleanup(func() { SetScheduling(SchedulingNormal) })
	if err := SetScheduling(SchedulingBatch); err != nil {
		t.Fatal(err)
	}
	for tid, p := range policies(t) {
		if p != unix.SCHED_BATCH {
			t.Errorf("thread %d: policy %d, want SCHED_BATCH (%d)", tid, p, unix.SCHED_BATCH)
		}
	}
	// Threads started afterwards inherit it: lock a few goroutines to
	// threads so the runtime must start new ones.
	var wg sync.WaitGroup
	got := make(chan uint32, 8)
	release := make(chan struct{})
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			a, err := unix.SchedGetAttr(0, 0)
			if err != nil {
				t.Error(err)
				got <- 0
			} else {
				got <- a.Policy
			}
			<-release
		}()
	}
	for i := 0; i < 8; i++ {
		if p := <-got; p != unix.SCHED_BATCH {
			t.Errorf("a thread started later runs policy %d, want SCHED_BATCH", p)
		}
	}
	close(release)
	wg.Wait()

	if err := SetScheduling(SchedulingNormal); err != nil {
		t.Fatal(err)
	}
	for tid, p := range policies(t) {
		if p != unix.SCHED_NORMAL {
			t.Errorf("thread %d: policy %d after normal, want SCHED_OTHER", tid, p)
		}
	}
	if err := SetScheduling("fifo"); err == nil {
		t.Error("an unknown policy was accepted")
	}
}
