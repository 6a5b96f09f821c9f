package ovsdb

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/model"
	libovsdb "github.com/ovn-org/libovsdb/ovsdb"
)

// monitorID names our one monitor on a connection.
const monitorID = "govswitch"

// Reconnection backoff: from 100 ms, doubling, to 8 s, as OVS's.
const (
	backoffMin = 100 * time.Millisecond
	backoffMax = 8 * time.Second
)

// dbClient keeps a libovsdb row cache of the monitored tables in step with
// ovsdb-server over its own JSON-RPC connection, reconnecting (and
// re-monitoring, from a purged cache) whenever the connection drops, and
// runs transactions.
type dbClient struct {
	remote  string
	tls     *tls.Config         // for ssl: remotes
	columns map[string][]string // table -> monitored columns
	onEvent func()              // called after every cache change

	mu      sync.Mutex
	conn    *rpcConn // nil while disconnected
	dbModel model.DatabaseModel
	cache   *cache.TableCache

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// connect dials remote, reads the schema, builds the cache and starts
// monitoring columns. It fails if the first connection does; later drops
// are repaired in the background until Close.
func connect(ctx context.Context, remote string, tlsConf *tls.Config, columns map[string][]string, onEvent func()) (*dbClient, error) {
	c := &dbClient{remote: remote, tls: tlsConf, columns: columns, onEvent: onEvent, stop: make(chan struct{})}
	if err := c.dial(ctx); err != nil {
		return nil, err
	}
	c.wg.Add(1)
	go c.keepConnected()
	return c, nil
}

// dial makes one connection: schema, cache (new, or purged), monitor.
func (c *dbClient) dial(ctx context.Context) error {
	// Updates are applied in order on their own goroutine, so the reader
	// never waits on the cache.
	updates := make(chan json.RawMessage, 64)
	notify := func(method string, params json.RawMessage) {
		if method == "update" {
			select {
			case updates <- params:
			case <-c.stop:
			}
		}
	}
	conn, err := dialRPC(ctx, c.remote, c.tls, notify)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		conn.Close()
		return err
	}
	raw, err := conn.Call(ctx, "get_schema", DatabaseName)
	if err != nil {
		return fail(err)
	}
	var schema libovsdb.DatabaseSchema
	if err := json.Unmarshal(raw, &schema); err != nil {
		return fail(fmt.Errorf("get_schema: %w", err))
	}
	cm, err := ClientModel()
	if err != nil {
		return fail(err)
	}
	dbm, errs := model.NewDatabaseModel(schema, cm)
	if len(errs) > 0 {
		return fail(fmt.Errorf("database model: %v", errs))
	}
	c.mu.Lock()
	tc := c.cache
	c.mu.Unlock()
	if tc == nil {
		quiet := logr.Discard()
		if tc, err = cache.NewTableCache(dbm, nil, &quiet); err != nil {
			return fail(fmt.Errorf("cache: %w", err))
		}
		tc.AddEventHandler(&cache.EventHandlerFuncs{
			AddFunc:    func(string, model.Model) { c.onEvent() },
			UpdateFunc: func(string, model.Model, model.Model) { c.onEvent() },
			DeleteFunc: func(string, model.Model) { c.onEvent() },
		})
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			tc.Run(c.stop)
		}()
	} else {
		// Rows deleted while we were away must go: start from empty.
		tc.Purge(dbm)
	}
	req := map[string]any{}
	for table, cols := range c.columns {
		req[table] = map[string]any{"columns": cols}
	}
	raw, err = conn.Call(ctx, "monitor", DatabaseName, monitorID, req)
	if err != nil {
		return fail(err)
	}
	var initial libovsdb.TableUpdates
	if err := json.Unmarshal(raw, &initial); err != nil {
		return fail(fmt.Errorf("monitor: %w", err))
	}
	if err := tc.Populate(initial); err != nil {
		return fail(fmt.Errorf("monitor: %w", err))
	}
	c.mu.Lock()
	c.conn, c.dbModel, c.cache = conn, dbm, tc
	c.mu.Unlock()
	c.onEvent()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			select {
			case params := <-updates:
				// params: [monitor id, table updates]
				var p []json.RawMessage
				var tu libovsdb.TableUpdates
				if json.Unmarshal(params, &p) != nil || len(p) != 2 || json.Unmarshal(p[1], &tu) != nil {
					continue
				}
				if err := tc.Populate(tu); err != nil {
					// The cache no longer matches the server: drop the
					// connection; the reconnect starts from a full copy.
					conn.Close()
				}
			case <-conn.Done():
				return
			case <-c.stop:
				return
			}
		}
	}()
	return nil
}

// keepConnected re-dials after the connection drops, backing off, until
// Close.
func (c *dbClient) keepConnected() {
	defer c.wg.Done()
	for {
		c.mu.Lock()
		conn := c.conn
		c.mu.Unlock()
		select {
		case <-c.stop:
			return
		case <-conn.Done():
		}
		c.mu.Lock()
		c.conn = nil
		c.mu.Unlock()
		wait := backoffMin
		for {
			select {
			case <-c.stop:
				return
			case <-time.After(wait):
			}
			ctx, cancel := context.WithTimeout(context.Background(), txnTimeout)
			go func() {
				select {
				case <-c.stop:
					cancel()
				case <-ctx.Done():
				}
			}()
			err := c.dial(ctx)
			cancel()
			if err == nil {
				break
			}
			wait = min(2*wait, backoffMax)
		}
	}
}

// Connected reports whether the cache is in step with the server.
func (c *dbClient) Connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn != nil
}

// Cache returns the row cache.
func (c *dbClient) Cache() *cache.TableCache {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cache
}

// Transact runs ops in one transaction and returns their results.
func (c *dbClient) Transact(ctx context.Context, ops ...libovsdb.Operation) ([]libovsdb.OperationResult, error) {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn == nil {
		return nil, fmt.Errorf("transact: not connected")
	}
	params := make([]any, 0, 1+len(ops))
	params = append(params, DatabaseName)
	for _, op := range ops {
		params = append(params, op)
	}
	raw, err := conn.Call(ctx, "transact", params...)
	if err != nil {
		return nil, err
	}
	var res []libovsdb.OperationResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("transact: %w", err)
	}
	return res, nil
}

// Update returns the operation writing the given fields (pointers into m)
// of the row m names by its UUID.
func (c *dbClient) Update(m model.Model, fields ...any) ([]libovsdb.Operation, error) {
	c.mu.Lock()
	dbm := c.dbModel
	c.mu.Unlock()
	table := dbm.FindTable(reflect.TypeOf(m))
	if table == "" {
		return nil, fmt.Errorf("update: %T is not a table of the model", m)
	}
	ts := dbm.Schema.Table(table)
	if ts == nil {
		return nil, fmt.Errorf("update: no table %s in the server's schema", table)
	}
	info, err := dbm.NewModelInfo(m)
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", table, err)
	}
	uuid, err := info.FieldByColumn("_uuid")
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", table, err)
	}
	row := libovsdb.Row{}
	for _, f := range fields {
		col, err := info.ColumnByPtr(f)
		if err != nil {
			return nil, fmt.Errorf("update %s: %w", table, err)
		}
		cs := ts.Column(col)
		if cs == nil || !cs.Mutable() {
			return nil, fmt.Errorf("update %s: column %s is not mutable", table, col)
		}
		v, err := info.FieldByColumn(col)
		if err != nil {
			return nil, fmt.Errorf("update %s: %w", table, err)
		}
		ov, err := libovsdb.NativeToOvs(cs, v)
		if err != nil {
			return nil, fmt.Errorf("update %s.%s: %w", table, col, err)
		}
		row[col] = ov
	}
	if len(row) == 0 {
		return nil, fmt.Errorf("update %s: no column to write", table)
	}
	return []libovsdb.Operation{{
		Op:    libovsdb.OperationUpdate,
		Table: table,
		Row:   row,
		Where: []libovsdb.Condition{libovsdb.NewCondition("_uuid", libovsdb.ConditionEqual, libovsdb.UUID{GoUUID: uuid.(string)})},
	}}, nil
}

// Close stops reconnecting and ends the connection and the cache's
// goroutines.
func (c *dbClient) Close() {
	c.stopOnce.Do(func() { close(c.stop) })
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
	c.wg.Wait()
	c.mu.Lock()
	if c.conn != nil {
		c.conn.Close() // a dial that finished during Close
		c.conn = nil
	}
	c.mu.Unlock()
}
