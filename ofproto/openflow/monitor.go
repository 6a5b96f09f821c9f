package openflow

// NXFlowMonitorCancel is NXT_FLOW_MONITOR_CANCEL: stop monitor ID.
type NXFlowMonitorCancel struct {
	Envelope
	ID uint32
}

func (m *NXFlowMonitorCancel) Append(b []byte) ([]byte, error) {
	b, start, err := appendNXHeader(b, &m.Envelope, NXTFlowMonitorCancel)
	if err != nil {
		return b, err
	}
	return finish(be32(b, m.ID), start)
}

// NXFlowMonitorFlowControl is NXT_FLOW_MONITOR_PAUSED (the switch stopped
// sending updates: the connection's queue filled) or, with Resumed,
// NXT_FLOW_MONITOR_RESUMED (it caught up and sends them again).
type NXFlowMonitorFlowControl struct {
	Envelope
	Resumed bool
}

func (m *NXFlowMonitorFlowControl) Append(b []byte) ([]byte, error) {
	sub := NXTFlowMonitorPaused
	if m.Resumed {
		sub = NXTFlowMonitorResumed
	}
	b, start, err := appendNXHeader(b, &m.Envelope, sub)
	if err != nil {
		return b, err
	}
	return finish(b, start)
}
