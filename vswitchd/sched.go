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
	tids, err := threads()
	if err != nil {
		return err
	}
	for _, tid := range tids {
		// Keep the thread's nice value: sched_setattr would reset it to 0.
		attr, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			if err == unix.ESRCH {
				continue // the thread exited meanwhile
			}
			return fmt.Errorf("scheduling: thread %d: %w", tid, err)
		}
		attr.Policy = p
		if err := unix.SchedSetAttr(tid, attr, 0); err != nil && err != unix.ESRCH {
			return fmt.Errorf("scheduling %s: thread %d: %w", policy, tid, err)
		}
	}
	return nil
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
