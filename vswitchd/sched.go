package vswitchd

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Scheduling policies for the daemon's threads (--scheduling).
//
// "batch" (the default) runs every thread under SCHED_BATCH. On an idle
// CPU that changes nothing: a handler woken by an upcall runs at once. On
// a busy one it stops each upcall's wake-up from preempting the task that
// is running — typically the very workload sending the packets that miss —
// so the handler runs at that task's next scheduling point and finds the
// upcalls queued meanwhile, and takes them in one batch: one receive, one
// send of puts and executes, one context switch, for many misses. Under a
// storm of new flows on a CPU the switch shares, that is the difference
// between a wake-up per upcall and a wake-up per batch (measured in the
// UML bed, exact-match regime: 1.2 upcalls per context switch of the
// daemon under SCHED_OTHER, 7 under SCHED_BATCH, and a fifth of the CPU
// per upcall). The cost is latency for the first packet of a flow while
// the CPU is busy: at most the running task's time slice.
//
// "normal" leaves the threads under SCHED_OTHER, as ovs-vswitchd runs.
const (
	SchedulingBatch  = "batch"
	SchedulingNormal = "normal"
)

// SetScheduling puts every thread of the process under the policy named
// ("batch" or "normal"). Threads the runtime starts later are cloned from
// these and inherit it. Moving between SCHED_OTHER and SCHED_BATCH needs
// no privilege.
func SetScheduling(policy string) error {
	var p uint32
	switch policy {
	case SchedulingBatch:
		p = unix.SCHED_BATCH
	case SchedulingNormal, "":
		p = unix.SCHED_NORMAL
	default:
		return fmt.Errorf("scheduling %q: want batch or normal", policy)
	}
	// A thread the runtime starts while this runs may be cloned from one
	// not yet switched and miss the change: go over the threads again
	// until a pass finds none to change.
	for pass := 0; pass < 5; pass++ {
		changed, err := setPolicy(p, policy)
		if err != nil || changed == 0 {
			return err
		}
	}
	return nil
}

// setPolicy puts every thread not already under p under it and returns how
// many it changed.
func setPolicy(p uint32, name string) (int, error) {
	tids, err := threads()
	if err != nil {
		return 0, err
	}
	changed := 0
	for _, tid := range tids {
		attr, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			if err == unix.ESRCH {
				continue // the thread exited meanwhile
			}
			return changed, fmt.Errorf("scheduling: thread %d: %w", tid, err)
		}
		if attr.Policy == p {
			continue
		}
		// The attributes read back keep the thread's nice value, which
		// sched_setattr would otherwise reset to 0.
		attr.Policy = p
		if err := unix.SchedSetAttr(tid, attr, 0); err != nil && err != unix.ESRCH {
			return changed, fmt.Errorf("scheduling %s: thread %d: %w", name, tid, err)
		}
		changed++
	}
	return changed, nil
}

// threads lists the process's thread IDs.
func threads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("scheduling: %w", err)
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
