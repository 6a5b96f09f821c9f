package ovsdb

import (
	"fmt"
	"sort"
	"sync"
	"syscall"
)

// fakeSwitch is an in-memory Switch: bridges with ports, over a set of
// network devices that exist.
type fakeSwitch struct {
	mu      sync.Mutex
	devices map[string]bool
	bridges map[string]*fakeBridge
	global  Global
	calls   []string
	failAdd map[string]error      // bridge name -> AddBridge error
	vlans   map[string]VLANConfig // "bridge/port" -> what SetPortVLAN applied
	ctZones map[uint16]map[string]uint32
	qos     map[string]QoSConfig
}

type fakeBridge struct {
	cfg   BridgeConfig
	ports map[string]PortState
	rt    BridgeRuntime // SetBridgeRuntime's
}

func newFakeSwitch(devices ...string) *fakeSwitch {
	f := &fakeSwitch{devices: map[string]bool{}, bridges: map[string]*fakeBridge{}, failAdd: map[string]error{}}
	for _, d := range devices {
		f.devices[d] = true
	}
	return f
}

func (f *fakeSwitch) record(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeSwitch) AddBridge(cfg *BridgeConfig, g Global) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("AddBridge %s", cfg.Name)
	if err := f.failAdd[cfg.Name]; err != nil {
		return err
	}
	if f.bridges[cfg.Name] != nil {
		return syscall.EEXIST
	}
	f.bridges[cfg.Name] = &fakeBridge{cfg: settingsOnly(cfg), ports: map[string]PortState{
		cfg.Name: {Name: cfg.Name, Type: "internal", OFPort: 65534}}}
	return nil
}

func (f *fakeSwitch) ReconfigureBridge(cfg *BridgeConfig, g Global) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ReconfigureBridge %s %s %d", cfg.Name, cfg.FailMode, len(cfg.Controllers))
	b := f.bridges[cfg.Name]
	if b == nil {
		return syscall.ENOENT
	}
	b.cfg = settingsOnly(cfg)
	return nil
}

func (f *fakeSwitch) DeleteBridge(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("DeleteBridge %s", name)
	if f.bridges[name] == nil {
		return syscall.ENOENT
	}
	delete(f.bridges, name)
	return nil
}

func (f *fakeSwitch) AddPort(bridge string, p *PortConfig) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("AddPort %s %s", bridge, p.Name)
	b := f.bridges[bridge]
	if b == nil {
		return syscall.ENOENT
	}
	if p.Type == "system" && !f.devices[p.Name] {
		return fmt.Errorf("add port %s: %w", p.Name, syscall.ENODEV)
	}
	ofport := p.OFPortRequest
	if ofport == 0 {
		used := map[uint32]bool{}
		for _, q := range b.ports {
			used[q.OFPort] = true
		}
		for ofport = 1; used[ofport]; ofport++ {
		}
	}
	b.ports[p.Name] = PortState{Name: p.Name, Type: p.Type, OFPort: ofport}
	return nil
}

func (f *fakeSwitch) DeletePort(bridge, port string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("DeletePort %s %s", bridge, port)
	b := f.bridges[bridge]
	if b == nil || b.ports[port].Name == "" {
		return syscall.ENOENT
	}
	delete(b.ports, port)
	delete(f.vlans, bridge+"/"+port)
	return nil
}

func (f *fakeSwitch) SetPortVLAN(bridge string, p *PortConfig) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.bridges[bridge]
	if b == nil {
		return false, syscall.ENOENT
	}
	if f.vlans == nil {
		f.vlans = map[string]VLANConfig{}
	}
	old := f.vlans[bridge+"/"+p.Name]
	if old.Equal(&p.VLAN) {
		return false, nil
	}
	f.vlans[bridge+"/"+p.Name] = p.VLAN
	f.record("SetPortVLAN %s %s %s", bridge, p.Name, p.VLAN)
	return true, nil
}

func (f *fakeSwitch) Ports(bridge string) ([]PortState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.bridges[bridge]
	if b == nil {
		return nil, syscall.ENOENT
	}
	var out []PortState
	for _, p := range b.ports {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].OFPort < out[j].OFPort })
	return out, nil
}

func (f *fakeSwitch) DatapathID(bridge string) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.bridges[bridge] == nil {
		return 0, syscall.ENOENT
	}
	if id := f.bridges[bridge].rt.DatapathID; id != 0 {
		return id, nil
	}
	return 0x0200_0000_0000 | uint64(len(bridge)), nil
}

func (f *fakeSwitch) SetBridgeRuntime(bridge string, rt BridgeRuntime) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.bridges[bridge]
	if b == nil {
		return syscall.ENOENT
	}
	b.rt = rt
	return nil
}

func (f *fakeSwitch) SetGlobal(g Global) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.global = g
}

func (f *fakeSwitch) SetCTZoneTimeouts(z map[uint16]map[string]uint32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ctZones = z
	f.calls = append(f.calls, fmt.Sprintf("ctzones %d", len(z)))
	return nil
}

func (f *fakeSwitch) SetQoS(q map[string]QoSConfig) map[string]error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.qos = q
	return nil
}

func (f *fakeSwitch) SetPolicing(p map[string]Policing) map[string]error { return nil }

// snapshot returns bridge -> sorted "name:ofport" list.
func (f *fakeSwitch) state() map[string][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string][]string{}
	for n, b := range f.bridges {
		l := []string{}
		for _, p := range b.ports {
			l = append(l, fmt.Sprintf("%s:%d", p.Name, p.OFPort))
		}
		sort.Strings(l)
		out[n] = l
	}
	return out
}

func (f *fakeSwitch) bridgeCfg(name string) (BridgeConfig, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.bridges[name]
	if b == nil {
		return BridgeConfig{}, false
	}
	return b.cfg, true
}
