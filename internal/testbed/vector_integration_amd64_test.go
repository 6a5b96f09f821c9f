package testbed

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/cpu"
)

// envVectorHolder makes the test binary a register holder (see
// vectorHolder) instead of running tests.
const envVectorHolder = "GOVSWITCH_VECTOR_HOLDER"

// TestIntegrationVectorRegisters: guest processes keep their vector
// registers across context switches. In the UML bed each guest task's FP
// state is moved by the UML kernel with ptrace (and, on hosts whose XSAVE
// image outgrows UML's buffer, by scripts/lib/uml-xstate.c); a task that
// got another's registers, or lost the upper part of its own, computes
// wrong results with nothing to tell. Two processes of two threads each
// hold distinct patterns in every register of the widest kind this CPU
// has (zmm0-31 and k1-7 with AVX-512F, else ymm0-15) through thousands of
// sched_yield calls and timer ticks, while shell loops run grep and
// sha256sum beside them (glibc's EVEX string functions on AVX-512 CPUs).
// Every register must come back as loaded, and the holders must have been
// switched out many times while holding them.
func TestIntegrationVectorRegisters(t *testing.T) {
	Require(t)
	kind := "ymm0-15 (AVX2)"
	switch {
	case cpu.X86.HasAVX512F:
		kind = "zmm0-31 and k1-7 (AVX-512F)"
	case cpu.X86.HasAVX2:
	default:
		t.Fatal("this CPU has neither AVX2 nor AVX-512F: nothing wide to check")
	}
	if !cpu.X86.HasAVX512F {
		t.Logf("AVX-512F not on this CPU: checking %s only", kind)
	}

	// Competing users of the vector unit, bounded in time.
	comp := exec.Command("bash", "-c", `
		for i in 1 2; do
			( for j in $(seq 400); do grep -c e /etc/services >/dev/null; sha256sum /etc/services >/dev/null; done ) &
		done
		wait`)
	if err := comp.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = comp.Process.Kill(); _ = comp.Wait() }()

	const procs, rounds, yields = 2, 60, 40
	var wg sync.WaitGroup
	outs := make([][]byte, procs)
	errs := make([]error, procs)
	for p := 0; p < procs; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run", "^TestIntegrationVectorRegisters$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d,%d,%d", envVectorHolder, p+1, rounds, yields))
			outs[p], errs[p] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	var switches, switchedOut, checked int
	for p := 0; p < procs; p++ {
		out := string(outs[p])
		if errs[p] != nil {
			t.Errorf("holder %d: %v\n%s", p+1, errs[p], out)
			continue
		}
		for _, line := range strings.Split(out, "\n") {
			var thr, ok, out, sw int
			if _, err := fmt.Sscanf(line, "holder thread %d: %d rounds intact, %d switched out, %d context switches",
				&thr, &ok, &out, &sw); err == nil {
				t.Logf("process %d thread %d: %d/%d rounds intact, %d switched out mid-hold, %d context switches",
					p+1, thr, ok, rounds, out, sw)
				switches += sw
				switchedOut += out
				checked += ok
			}
			if strings.HasPrefix(line, "holder thread") && strings.Contains(line, "CORRUPT") {
				t.Errorf("process %d: %s", p+1, line)
			}
		}
	}
	if want := procs * 2 * rounds; checked != want {
		t.Errorf("%d rounds came back intact, want %d", checked, want)
	}
	// Each round makes yields sched_yield calls with other holders
	// runnable: most rounds must have been switched out mid-hold.
	if total := procs * 2 * rounds; switchedOut < total*3/4 {
		t.Errorf("%d of %d rounds were switched out while holding registers: the test did not test", switchedOut, total)
	}
	t.Logf("%s: %d rounds intact, %d switched out mid-hold, %d context switches", kind, checked, switchedOut, switches)
}

// vectorHolder runs in a child process: two OS threads, each rounds times
// loads a fresh pattern into every register, holds it through yields
// sched_yield calls, and compares. It prints one line per thread.
func vectorHolder(spec string) {
	var seed, rounds, yields int
	if _, err := fmt.Sscanf(spec, "%d,%d,%d", &seed, &rounds, &yields); err != nil {
		fmt.Println("holder: bad spec", spec)
		os.Exit(2)
	}
	var wg sync.WaitGroup
	for thr := 0; thr < 2; thr++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			size := ymmBytes
			hold := holdYMM
			if cpu.X86.HasAVX512F {
				size, hold = zmmBytes, holdZMM
			}
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(thr)))
			in, out := make([]byte, size), make([]byte, size)
			intact, switchedOut, switches := 0, 0, 0
			for r := 0; r < rounds; r++ {
				for i := range in {
					in[i] = byte(rng.Uint32())
				}
				clear(out)
				before := threadSwitches()
				hold(&in[0], &out[0], yields, 2000)
				n := threadSwitches() - before
				switches += n
				if n > 0 {
					switchedOut++
				}
				if !bytes.Equal(in, out) {
					i := 0
					for in[i] == out[i] {
						i++
					}
					fmt.Printf("holder thread %d: CORRUPT in round %d: first wrong byte %d (register %s)\n",
						thr, r, i, registerAt(size, i))
					continue
				}
				intact++
			}
			fmt.Printf("holder thread %d: %d rounds intact, %d switched out, %d context switches\n",
				thr, intact, switchedOut, switches)
		}()
	}
	wg.Wait()
	os.Exit(0)
}

// registerAt names the register that byte i of a holder's buffer holds.
func registerAt(size, i int) string {
	if size == zmmBytes {
		if i < 2048 {
			return "zmm" + strconv.Itoa(i/64)
		}
		return "k" + strconv.Itoa((i-2048)/2+1)
	}
	return "ymm" + strconv.Itoa(i/32)
}

// threadSwitches is the calling thread's voluntary plus involuntary
// context switches so far.
func threadSwitches() int {
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return 0
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && strings.HasSuffix(f[0], "ctxt_switches:") {
			v, _ := strconv.Atoi(f[1])
			n += v
		}
	}
	return n
}

func init() {
	if spec := os.Getenv(envVectorHolder); spec != "" {
		vectorHolder(spec)
	}
}
