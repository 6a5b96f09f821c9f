package ovsdb

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/model"
	libovsdb "github.com/ovn-org/libovsdb/ovsdb"
)

// Defaults of a Monitor.
const (
	// DefaultRemote is where ovsdb-server listens on a Debian box.
	DefaultRemote = "unix:/var/run/openvswitch/db.sock"
	// DefaultRefresh is how often interface state (link, MAC, ifindex) is
	// read again without a database change, as ovs-vswitchd's status
	// update interval.
	DefaultRefresh = 5 * time.Second
	// txnTimeout bounds one write-back transaction.
	txnTimeout = 10 * time.Second
)

// StatusNotifier is a Switch that says when status it reports (Ports'
// LACPCurrent) changed on its own, so that the Monitor writes it back at
// once rather than at the next refresh, as ovs-vswitchd's status update
// follows its connectivity sequence. Only columns that differ from the
// rows are written either way.
type StatusNotifier interface {
	// StatusChanged is readable after a change; one value stands for any
	// number of changes since the last read.
	StatusChanged() <-chan struct{}
}

// Monitor keeps a Switch configured from ovsdb-server.
type Monitor struct {
	// Remote is the ovsdb-server to connect to, "unix:PATH",
	// "tcp:IP:PORT" or "ssl:IP:PORT"; "" means DefaultRemote.
	Remote string
	// TLS is the client configuration of an ssl: Remote.
	TLS *tls.Config
	// Refresh is the period of state refreshes; 0 means DefaultRefresh.
	Refresh time.Duration
	// Logf receives the log lines, with their level (see
	// Reconciler.Logf); nil discards them.
	Logf func(level slog.Level, format string, args ...any)
	// ConfigLogf, if set, takes the reconciler's lines (bridges and ports
	// added, deleted, refused) instead of Logf, so that a daemon can file
	// them apart from the connection's.
	ConfigLogf func(level slog.Level, format string, args ...any)
	// OnReconciled, if set, is called after each pass that brought the
	// switch in line with the database (the first one tells a daemon it
	// is configured).
	OnReconciled func()
	// OnApplied, if set, is called after each write-back with the
	// next_cfg it acknowledged (tests wait on it).
	OnApplied func(cfg int)

	sw Switch
	// stpStatusAt is when STP status was last written in full (stp.go).
	stpStatusAt time.Time
	// rstpStatusAt is the same for RSTP (rstp.go).
	rstpStatusAt time.Time
	// mirrorStatsAt is when Mirror statistics were last written (mirror.go).
	mirrorStatsAt time.Time
}

// NewMonitor returns a monitor that will configure sw.
func NewMonitor(sw Switch, remote string) *Monitor {
	return &Monitor{sw: sw, Remote: remote}
}

func (m *Monitor) logf(level slog.Level, format string, args ...any) {
	if m.Logf != nil {
		m.Logf(level, format, args...)
	}
}

// Run connects to the database, applies its configuration and every later
// change, and returns when ctx ends (nil) or the first connection fails
// (the error). A connection lost later is re-established in the background; the
// switch keeps running meanwhile. The caller keeps ownership of the Switch
// and tears it down after Run returns.
func (m *Monitor) Run(ctx context.Context) error {
	remote := m.Remote
	if remote == "" {
		remote = DefaultRemote
	}
	refresh := m.Refresh
	if refresh <= 0 {
		refresh = DefaultRefresh
	}
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	// Monitor the models' columns only: the switch reads nothing else, and
	// an update touching a column the models lack (say `ovs-vsctl set
	// Open_vSwitch . external_ids:k=v`) must not upset the cache, or
	// ovs-vsctl would wait for ever for that next_cfg.
	cols := map[string][]string{
		TableOpenSwitch: modelColumns(&OpenvSwitch{}),
		TableBridge:     modelColumns(&Bridge{}),
		TablePort:       modelColumns(&Port{}),
		TableInterface:  modelColumns(&Interface{}),
		TableController: modelColumns(&Controller{}),
		TableSFlow:      modelColumns(&SFlow{}),
		TableNetFlow:    modelColumns(&NetFlow{}),
		TableIPFIX:      modelColumns(&IPFIX{}),
		TableFSCS:       modelColumns(&FlowSampleCollectorSet{}),
		TableDatapath:   modelColumns(&Datapath{}),
		TableCTZone:     modelColumns(&CTZone{}),
		TableCTTimeout:  modelColumns(&CTTimeoutPolicy{}),
		TableQoS:        modelColumns(&QoS{}),
		TableQueue:      modelColumns(&Queue{}),
		TableMirror:     modelColumns(&Mirror{}),
	}
	cctx, cancel := context.WithTimeout(ctx, txnTimeout)
	c, err := connect(cctx, remote, m.TLS, cols, poke)
	cancel()
	if err != nil {
		return fmt.Errorf("ovsdb %s: connect: %w (is ovsdb-server running?)", remote, err)
	}
	defer c.Close()
	m.logf(slog.LevelInfo, "%s: connected and monitoring", remote)
	rec := NewReconciler(m.sw)
	rec.Logf = m.Logf
	if m.ConfigLogf != nil {
		rec.Logf = m.ConfigLogf
	}
	tick := time.NewTicker(refresh)
	defer tick.Stop()
	var status <-chan struct{}
	if sn, ok := m.sw.(StatusNotifier); ok {
		status = sn.StatusChanged()
	}
	poke()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-kick:
		case <-tick.C:
		case <-status:
		}
		if !c.Connected() {
			continue // the cache is stale; the reconnect repopulates it and kicks us
		}
		err := m.reconcile(ctx, c, rec)
		if err == nil && m.OnReconciled != nil {
			m.OnReconciled()
		}
		if err != nil && ctx.Err() == nil {
			m.logf(slog.LevelWarn, "%s: %v", remote, err)
			// A failed write (a conflicting transaction, a reconnect)
			// is retried on the next change or tick.
		}
	}
}

// modelColumns returns the columns the tagged fields of the model m (a
// pointer to a struct) name, except _uuid.
func modelColumns(m model.Model) []string {
	v := reflect.ValueOf(m).Elem()
	var cols []string
	for i := 0; i < v.NumField(); i++ {
		tag := v.Type().Field(i).Tag.Get("ovsdb")
		if tag == "" || tag == "_uuid" {
			continue
		}
		cols = append(cols, tag)
	}
	return cols
}

// snapshot copies the cached rows. The cache's rows are shared with
// libovsdb; the copies are ours.
func snapshot(c *dbClient) *Rows {
	r := &Rows{Bridges: map[string]*Bridge{}, Ports: map[string]*Port{},
		Interfaces: map[string]*Interface{}, Controllers: map[string]*Controller{},
		Datapaths: map[string]*Datapath{}, CTZones: map[string]*CTZone{}, CTTimeouts: map[string]*CTTimeoutPolicy{},
		QoS: map[string]*QoS{}, Queues: map[string]*Queue{}}
	tc := c.Cache()
	if t := tc.Table(TableOpenSwitch); t != nil {
		for _, row := range t.Rows() {
			if o, ok := row.(*OpenvSwitch); ok {
				r.Root = o
			}
		}
	}
	if t := tc.Table(TableBridge); t != nil {
		for u, row := range t.Rows() {
			if b, ok := row.(*Bridge); ok {
				r.Bridges[u] = b
			}
		}
	}
	if t := tc.Table(TablePort); t != nil {
		for u, row := range t.Rows() {
			if p, ok := row.(*Port); ok {
				r.Ports[u] = p
			}
		}
	}
	if t := tc.Table(TableInterface); t != nil {
		for u, row := range t.Rows() {
			if i, ok := row.(*Interface); ok {
				r.Interfaces[u] = i
			}
		}
	}
	if t := tc.Table(TableController); t != nil {
		for u, row := range t.Rows() {
			if ct, ok := row.(*Controller); ok {
				r.Controllers[u] = ct
			}
		}
	}
	snapshotSampling(tc, r)
	copyRows(tc.Table(TableDatapath), r.Datapaths)
	copyRows(tc.Table(TableCTZone), r.CTZones)
	copyRows(tc.Table(TableCTTimeout), r.CTTimeouts)
	copyRows(tc.Table(TableQoS), r.QoS)
	copyRows(tc.Table(TableQueue), r.Queues)
	snapshotMirrors(tc.Table(TableMirror), r) // mirror.go
	return r
}

// copyRows fills into with the rows of t (nil: none) of model type T.
func copyRows[T any](t *cache.RowCache, into map[string]*T) {
	if t == nil {
		return
	}
	for u, row := range t.Rows() {
		if v, ok := row.(*T); ok {
			into[u] = v
		}
	}
}

// reconcile applies the cached configuration and writes back the result,
// then cur_cfg, in one transaction.
func (m *Monitor) reconcile(ctx context.Context, c *dbClient, rec *Reconciler) error {
	rows := snapshot(c)
	d := Build(rows)
	ifaces, dpids := rec.Apply(&d)
	var ops []libovsdb.Operation
	for uuid, st := range ifaces {
		cur := rows.Interfaces[uuid]
		if cur == nil {
			continue
		}
		o, err := ifaceUpdate(c, cur, st)
		if err != nil {
			return err
		}
		ops = append(ops, o...)
	}
	for uuid, id := range dpids {
		cur := rows.Bridges[uuid]
		if cur == nil {
			continue
		}
		want := fmt.Sprintf("%016x", id)
		if cur.DatapathID != nil && *cur.DatapathID == want {
			continue
		}
		b := &Bridge{UUID: uuid, DatapathID: &want}
		o, err := c.Update(b, &b.DatapathID)
		if err != nil {
			return fmt.Errorf("bridge %s: datapath_id: %w", cur.Name, err)
		}
		ops = append(ops, o...)
	}
	o, err := datapathUpdates(c, m.sw, rows.Root)
	if err != nil {
		return err
	}
	ops = append(ops, o...)
	o, err = m.stpStatusUpdates(c, rows) // stp.go
	if err != nil {
		return err
	}
	ops = append(ops, o...)
	o, err = m.rstpStatusUpdates(c, rows) // rstp.go
	if err != nil {
		return err
	}
	ops = append(ops, o...)
	o, err = m.mirrorStatsUpdates(c, rows) // mirror.go
	if err != nil {
		return err
	}
	ops = append(ops, o...)
	if rows.Root != nil && rows.Root.CurCfg != d.NextCfg {
		root := &OpenvSwitch{UUID: rows.Root.UUID, CurCfg: d.NextCfg}
		o, err := c.Update(root, &root.CurCfg)
		if err != nil {
			return fmt.Errorf("cur_cfg: %w", err)
		}
		ops = append(ops, o...)
	}
	if len(ops) == 0 {
		return nil
	}
	tctx, cancel := context.WithTimeout(ctx, txnTimeout)
	defer cancel()
	res, err := c.Transact(tctx, ops...)
	if err != nil {
		return fmt.Errorf("write back: %w", err)
	}
	if _, err := libovsdb.CheckOperationResults(res, ops); err != nil {
		return fmt.Errorf("write back: %w", err)
	}
	if m.OnApplied != nil {
		m.OnApplied(d.NextCfg)
	}
	return nil
}

// ifaceUpdate returns the update of one Interface row to st, or nothing
// when the row already says so.
func ifaceUpdate(c *dbClient, cur *Interface, st ifaceStatus) ([]libovsdb.Operation, error) {
	n := &Interface{UUID: cur.UUID}
	var fields []any
	setInt := func(field **int, have *int, v int, ok bool) {
		switch {
		case ok && (have == nil || *have != v):
			*field = &v
			fields = append(fields, field)
		case !ok && have != nil:
			fields = append(fields, field) // clear: nil writes the empty set
		}
	}
	setStr := func(field **string, have *string, v string) {
		switch {
		case v != "" && (have == nil || *have != v):
			*field = &v
			fields = append(fields, field)
		case v == "" && have != nil:
			fields = append(fields, field)
		}
	}
	setInt(&n.Ofport, cur.Ofport, st.ofport, true)
	setStr(&n.Error, cur.Error, st.err)
	if st.ofport >= 0 {
		setInt(&n.Ifindex, cur.Ifindex, st.ifindex, st.known)
		setStr(&n.MACInUse, cur.MACInUse, st.mac)
		setStr(&n.AdminState, cur.AdminState, st.admin)
		setStr(&n.LinkState, cur.LinkState, st.link)
	}
	switch {
	case st.lacp != nil && (cur.LACPCurrent == nil || *cur.LACPCurrent != *st.lacp):
		v := *st.lacp
		n.LACPCurrent = &v
		fields = append(fields, &n.LACPCurrent)
	case st.lacp == nil && cur.LACPCurrent != nil:
		fields = append(fields, &n.LACPCurrent)
	}
	if len(fields) == 0 {
		return nil, nil
	}
	ops, err := c.Update(n, fields...)
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", cur.Name, err)
	}
	return ops, nil
}

// String names the remote for logs.
func (m *Monitor) String() string {
	if m.Remote == "" {
		return DefaultRemote
	}
	return strings.TrimSpace(m.Remote)
}
