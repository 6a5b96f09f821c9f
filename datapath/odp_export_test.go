package datapath

import (
	"math/rand/v2"

	"github.com/govswitch/govswitch/flow"
)

// Test helpers for the external tests (package datapath_test).

// KeysForTest returns the names and keys of testKeys.
func KeysForTest() (names []string, keys []flow.Key) {
	for _, tc := range testKeys() {
		names = append(names, tc.name)
		keys = append(keys, tc.key)
	}
	return names, keys
}

// RandomMask returns randomMask(r).
func RandomMask(r *rand.Rand) flow.Mask { return randomMask(r) }
