package ofproto

// HoldForBond makes port name a member of a placeholder bond called bond
// that carries nothing, until SetBonds gives the bond its configuration.
// The database layer adds a bond's members one port at a time and sets up
// the bond after them: without the hold, the members would be ports of
// their own for that moment, and NORMAL would flood between them — a loop
// through the peer, which a Linux 802.3ad peer reports as "an illegal
// loopback" and which could melt a peer bridge. ovs-vswitchd makes the
// bundle with its members in one step. The members of one pending bond
// share the placeholder.
func (b *Bridge) HoldForBond(name, bond string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.portNamed(name)
	if err != nil {
		return err
	}
	var hold *Bond
	for _, q := range b.Ports.Snapshot().List() {
		if q.Bond != nil && q.Bond.Config.Name == bond {
			hold = q.Bond
		}
	}
	if p.Bond != nil && p.Bond == hold {
		return nil
	}
	if hold == nil {
		hold = &Bond{Config: BondConfig{Name: bond, Mode: bondDrop}}
	}
	np := *p
	np.Bond = hold
	if err := b.Ports.Add(np); err != nil {
		return err
	}
	b.Tables.Invalidate()
	return nil
}
