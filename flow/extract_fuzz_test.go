package flow

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// FuzzExtract feeds arbitrary frames to Extract. It must not panic, must
// agree with ExtractInto, must agree with gopacket on every field gopacket
// decodes (gopacketKey, which encodes where the kernel's rules differ), and
// must read a prefix of the frame consistently with the whole.
//
// The seed corpus in testdata/fuzz/FuzzExtract holds generated packets of
// every kind and every table case; regenerate it with
//
//	go test ./flow -run TestExtractFuzzCorpus -extract.write-seeds
func FuzzExtract(f *testing.F) {
	for _, p := range extractBenchPackets {
		f.Add(p.pkt)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		var k Key
		ExtractInto(&k, pkt, nil)
		if e := Extract(pkt, Metadata{}); e != k {
			t.Fatalf("Extract and ExtractInto differ on %x", pkt)
		}
		want, mask := gopacketKey(pkt)
		if !k.EqualMasked(&want, &mask) {
			t.Fatalf("%x: disagrees with gopacket:\n%s", pkt, extractDiffKeys(&k, &want, &mask))
		}
		if len(pkt) > 0 {
			n := int(pkt[0]) % len(pkt)
			var pk Key
			ExtractInto(&pk, pkt[:n:n], nil)
			if msg := prefixConsistent(&pk, &k); msg != "" {
				t.Fatalf("%x cut at %d: %s", pkt, n, msg)
			}
		}
	})
}

var writeSeeds = flag.Bool("extract.write-seeds", false, "rewrite testdata/fuzz/FuzzExtract from the generated packets and table cases")

const seedDir = "testdata/fuzz/FuzzExtract"

// TestExtractFuzzCorpus checks that the checked-in seed corpus covers every
// protocol Extract knows, so that fuzzing starts from all of them.
func TestExtractFuzzCorpus(t *testing.T) {
	if *writeSeeds {
		writeExtractSeeds(t)
	}
	ents, err := os.ReadDir(seedDir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range ents {
		pkt, err := readSeed(filepath.Join(seedDir, e.Name()))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		k := Extract(pkt, Metadata{})
		seen[fmt.Sprintf("ethtype %#04x", k.EthType)] = true
		if k.VLANs[1].TCI != 0 {
			seen["two tags"] = true
		}
		if k.MPLSLSE != 0 {
			seen["mpls label"] = true
		}
		if k.EthType == EthTypeIPv4 || k.EthType == EthTypeIPv6 {
			seen[fmt.Sprintf("ip%d proto %d", map[uint16]int{EthTypeIPv4: 4, EthTypeIPv6: 6}[k.EthType], k.NwProto)] = true
			seen[fmt.Sprintf("frag %d", k.NwFrag)] = true
		}
		if k.TpSrc != 0 || k.TpDst != 0 {
			seen[fmt.Sprintf("ports of %d", k.NwProto)] = true
		}
		if k.NDSLL != ([6]byte{}) || k.NDTLL != ([6]byte{}) {
			seen["nd option"] = true
		}
		if k.ArpSHA != ([6]byte{}) {
			seen["arp addresses"] = true
		}
	}
	for _, want := range []string{
		"ethtype 0x0800", "ethtype 0x86dd", "ethtype 0x0806", "ethtype 0x8035", "ethtype 0x8847",
		"ethtype 0x05ff", "ethtype 0x8100", "two tags", "mpls label",
		"ip4 proto 6", "ip4 proto 17", "ip4 proto 132", "ip4 proto 1",
		"ip6 proto 6", "ip6 proto 17", "ip6 proto 132", "ip6 proto 58", "ip6 proto 44", "ip6 proto 50", "ip6 proto 59",
		"frag 1", "frag 3", "ports of 6", "ports of 17", "ports of 132", "ports of 1", "ports of 58",
		"nd option", "arp addresses",
	} {
		if !seen[want] {
			t.Errorf("seed corpus has no packet with %s", want)
		}
	}
	t.Logf("%d seeds", len(ents))
}

var seedLine = regexp.MustCompile(`^\[\]byte\((".*")\)$`)

// readSeed reads a one-value corpus file in the "go test fuzz v1" format.
func readSeed(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || lines[0] != "go test fuzz v1" {
		return nil, fmt.Errorf("not a go test fuzz v1 file with one value")
	}
	m := seedLine.FindStringSubmatch(lines[1])
	if m == nil {
		return nil, fmt.Errorf("not a []byte value: %q", lines[1])
	}
	s, err := strconv.Unquote(m[1])
	return []byte(s), err
}

func writeExtractSeeds(t *testing.T) {
	if err := os.MkdirAll(seedDir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, pkt []byte) {
		name = strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				return r
			}
			return '-'
		}, strings.ToLower(name))
		data := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", pkt)
		if err := os.WriteFile(filepath.Join(seedDir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range genPackets(t, 2) {
		write(fmt.Sprintf("gen-%s-%d", p.kind, i/len(genKinds)), p.data)
	}
	for _, c := range extractCases {
		write("case-"+c.name, c.pkt)
	}
}
