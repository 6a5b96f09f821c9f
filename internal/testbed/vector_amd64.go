package testbed

// Implemented in vector_amd64.s, for TestIntegrationVectorRegisters: load
// every vector register of the kind from in, make yields sched_yield calls
// with spin loop iterations before each, store the registers to out.
// holdZMM needs AVX-512F (in and out hold zmmBytes), holdYMM AVX2 (ymmBytes).

const (
	zmmBytes = 32*64 + 7*2 // zmm0-31, k1-7
	ymmBytes = 16 * 32     // ymm0-15
)

//go:noescape
func holdZMM(in, out *byte, yields, spin int)

//go:noescape
func holdYMM(in, out *byte, yields, spin int)
