package kernel

import (
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/internal/testbed"
)

// benchDP creates a datapath with two veth ports for a benchmark.
func benchDP(b *testing.B, cfg datapath.Config) (*Datapath, *rawLink, datapath.Vport, datapath.Vport) {
	b.Helper()
	name := uniqueName("gb")
	dpi, err := Provider{}.Create(name, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		dpi.Close()
		Provider{}.Delete(name)
	})
	dp := dpi.(*Datapath)
	ns := testbed.NewNetns(b)
	var links [2]*rawLink
	var ports [2]datapath.Vport
	for i := range links {
		host := uniqueName("gb")
		peer := "eth" + string(rune('0'+i))
		testbed.Veth(b, host, ns, peer, "")
		links[i] = &rawLink{name: host, raw: testbed.OpenRaw(b, ns, peer)}
		v, err := dp.AddVport(datapath.VportSpec{Name: host, Type: datapath.VportNetdev})
		if err != nil {
			b.Fatal(err)
		}
		ports[i] = v
	}
	time.Sleep(time.Second) // carrier; see newLink
	return dp, links[0], ports[0], ports[1]
}

// putOps builds n flow puts with distinct UFIDs and destination addresses.
func putOps(n int, in, out uint32) []datapath.Op {
	var m flow.Mask
	m.InPort, m.EthType, m.NwProto = ^uint32(0), 0xffff, 0xff
	m.IPv4Dst = [4]byte{255, 255, 255, 255}
	ops := make([]datapath.Op, n)
	for i := range ops {
		fr := append([]byte(nil), testFrame...)
		fr[32], fr[33] = byte(i>>8), byte(i)
		u := datapath.UFID{'b', 'e', 'n', 'c', 'h', byte(i >> 8), byte(i)}
		ops[i] = datapath.Op{Kind: datapath.OpPut, Flags: datapath.PutCreate, Flow: datapath.Flow{
			UFID: u, Key: flow.Extract(fr, flow.Metadata{InPort: in}), Mask: m, Actions: datapath.AppendOutput(nil, out),
		}}
	}
	return ops
}

// BenchmarkIntegrationFlowPut installs 50 flows per iteration, one per
// sendmsg (PutFlow) or batched (Operate), and reports puts/s. The flows
// are flushed between iterations, off the clock. In the bed:
//
//	scripts/kernel-test --bench FlowPut ./datapath/kernel
func BenchmarkIntegrationFlowPut(b *testing.B) {
	testbed.Require(b)
	const n = 50
	for _, mode := range []string{"single", "batched"} {
		b.Run(mode, func(b *testing.B) {
			dp, _, va, vb := benchDP(b, datapath.Config{})
			ops := putOps(n, va.PortNo, vb.PortNo)
			sends0 := dp.sock.Stats().Sends
			b.ReportAllocs()
			var elapsed time.Duration
			for b.Loop() {
				start := time.Now()
				if mode == "single" {
					for i := range ops {
						if err := dp.PutFlow(&ops[i].Flow, datapath.PutCreate); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					if err := dp.Operate(ops); err != nil {
						b.Fatal(err)
					}
					for i := range ops {
						if ops[i].Err != nil {
							b.Fatal(ops[i].Err)
						}
					}
				}
				elapsed += time.Since(start)
				b.StopTimer()
				if err := dp.FlushFlows(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			iters := float64(b.N)
			b.ReportMetric(iters*n/elapsed.Seconds(), "puts/s")
			// Flushes are one sendmsg each; the rest are puts.
			b.ReportMetric((float64(dp.sock.Stats().Sends-sends0)-iters)/(iters*n), "sendmsg/put")
		})
	}
}

// BenchmarkIntegrationUpcalls measures receiving MISS upcalls: each
// iteration queues 256 misses (frames sent into a port with no flows, off
// the clock), then reads them through a handler in batches of 64 and
// reports upcalls/s and allocations per batch of 256.
//
//	scripts/kernel-test --bench Upcalls ./datapath/kernel
func BenchmarkIntegrationUpcalls(b *testing.B) {
	testbed.Require(b)
	const n = 256
	dp, la, _, _ := benchDP(b, datapath.Config{Handlers: 1})
	h := dp.Handlers()[0]
	ups := make([]datapath.Upcall, 64)
	bufs := make([][]byte, 64)
	for i := range bufs {
		bufs[i] = make([]byte, 4096)
	}
	frames := make([][]byte, n)
	for i := range frames {
		fr := append([]byte(nil), testFrame...)
		fr[33], fr[37] = byte(i), byte(i>>8) // distinct flows
		frames[i] = fr
	}
	var elapsed time.Duration
	var got, batches int
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		for _, fr := range frames {
			if err := la.Send(fr); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start := time.Now()
		h.SetReadDeadline(time.Now().Add(5 * time.Second))
		for left := n; left > 0; {
			k, err := h.Recv(ups, bufs)
			if err != nil {
				b.Fatalf("after %d of %d upcalls: %v (lost %d)", n-left, n, err, h.Lost())
			}
			left -= k
			got += k
			batches++
		}
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(got)/elapsed.Seconds(), "upcalls/s")
	b.ReportMetric(float64(got)/float64(batches), "upcalls/recv")
	st, _ := dp.Stats()
	b.ReportMetric(float64(st.Lost), "lost")
}
