package vswitchd

import (
	"slices"
	"testing"
)

func TestQoSHmapOrder(t *testing.T) {
	for _, c := range []struct {
		name   string
		hashes []uint32
		want   []int
	}{
		{"one bucket, newest first", []uint32{5}, []int{0}},
		// Two nodes grow the table to 4 buckets: by bucket.
		{"two grow to four buckets", []uint32{3, 1}, []int{1, 0}},
		{"same bucket, moved in order, so reversed", []uint32{4, 8}, []int{0, 1}},
		{"three in four buckets", []uint32{2, 1, 0}, []int{2, 1, 0}},
		{"same bucket after growth: newest first", []uint32{1, 2, 5}, []int{2, 0, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := hmapOrder(c.hashes); !slices.Equal(got, c.want) {
				t.Errorf("order %v, want %v", got, c.want)
			}
		})
	}
}
