package netlinkio

import (
	"testing"
)

// BenchmarkTransact sends batches of controller requests that each get a
// reply (GETFAMILY nlctrl) or none (silent NOOPs), either all in one
// Transact or one Transact per request, over a size matrix. It shows what
// batching saves per request on this host; the datapath's own numbers
// come from the bed (datapath/kernel BenchmarkIntegrationFlowPut).
func BenchmarkTransact(b *testing.B) {
	for _, kind := range []string{"noop", "getfamily"} {
		for _, n := range []int{1, 16, 128} {
			for _, batched := range []bool{false, true} {
				mode := "single"
				if batched {
					mode = "batched"
				}
				b.Run(kind+"/"+itoa(n)+"/"+mode, func(b *testing.B) {
					s := openSocket(b)
					var batch Batch
					add := func() {
						if kind == "noop" {
							batch.End(batch.Begin(TypeNoop, 0, 0, 0))
						} else {
							buf := batch.Begin(ctrlFamily, 0, ctrlCmdGetFamily, ctrlVersion)
							buf = AppendAttr(buf, ctrlAttrName, []byte("nlctrl\x00"))
							batch.End(buf)
						}
					}
					b.ReportAllocs()
					for b.Loop() {
						if batched {
							batch.Reset()
							for range n {
								add()
							}
							if err := s.Transact(&batch); err != nil {
								b.Fatal(err)
							}
							continue
						}
						for range n {
							batch.Reset()
							add()
							if err := s.Transact(&batch); err != nil {
								b.Fatal(err)
							}
						}
					}
					b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "req/s")
				})
			}
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}

// BenchmarkRecvBatch reads datagrams sent from another socket in batches
// of 1, 8 and 64 buffers.
func BenchmarkRecvBatch(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		b.Run(itoa(n), func(b *testing.B) {
			rx, tx := openSocket(b), openSocket(b)
			bufs := make([][]byte, n)
			for i := range bufs {
				bufs[i] = make([]byte, 2048)
			}
			sizes := make([]int, n)
			msg := datagram(1, 200)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				for range n {
					sendTo(b, tx, rx.PID(), msg)
				}
				b.StartTimer()
				for got := 0; got < n; {
					k, err := rx.RecvBatch(bufs, sizes)
					if err != nil {
						b.Fatal(err)
					}
					got += k
				}
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// FuzzMessageIter: the message walker never panics and never hands out a
// payload outside its buffer.
func FuzzMessageIter(f *testing.F) {
	f.Add(datagram(1, 4))
	f.Add(append(datagram(1, 0), datagram(2, 7)...))
	f.Add([]byte{16, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		it := NewMessageIter(b)
		total := 0
		for it.Next() {
			h := it.Header()
			if int(h.Len) != HeaderLen+len(it.Data()) {
				t.Fatalf("len %d, payload %d", h.Len, len(it.Data()))
			}
			total += int(h.Len)
			if total > len(b) {
				t.Fatalf("walked %d of %d bytes", total, len(b))
			}
			_ = ErrorCode(it.Data())
			Genl(it.Data())
		}
	})
}
