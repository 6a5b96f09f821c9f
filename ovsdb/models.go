// Package ovsdb configures govswitchd from ovsdb-server, so that ovs-vsctl
// works against it as it does against ovs-vswitchd. It monitors the
// Open_vSwitch, Bridge, Port, Interface and Controller tables, turns them
// into the switch's desired configuration, applies the difference through a
// Switch, writes back what the switch did (Interface.ofport, ifindex,
// mac_in_use, admin_state, link_state, error; Bridge.datapath_id), and then
// sets Open_vSwitch.cur_cfg to the next_cfg it applied, which is what
// ovs-vsctl waits for.
//
// The models below are hand-written subsets of the Open_vSwitch schema
// (vswitch.ovsschema 8.x): libovsdb maps only the tagged columns, and each
// tagged column must have the schema's native type (optional scalars are
// pointers, sets are slices, maps are maps).
package ovsdb

import (
	"github.com/ovn-org/libovsdb/model"
)

// Table names of the Open_vSwitch database.
const (
	DatabaseName    = "Open_vSwitch"
	TableOpenSwitch = "Open_vSwitch"
	TableBridge     = "Bridge"
	TablePort       = "Port"
	TableInterface  = "Interface"
	TableController = "Controller"
	TableDatapath   = "Datapath"
	TableCTZone     = "CT_Zone"
	TableCTTimeout  = "CT_Timeout_Policy"
	TableQoS        = "QoS"
	TableQueue      = "Queue"
	TableMirror     = "Mirror"
)

// OpenvSwitch is the root row of the database (there is exactly one).
type OpenvSwitch struct {
	UUID        string            `ovsdb:"_uuid"`
	Bridges     []string          `ovsdb:"bridges"` // Bridge UUIDs
	NextCfg     int               `ovsdb:"next_cfg"`
	CurCfg      int               `ovsdb:"cur_cfg"`
	OtherConfig map[string]string `ovsdb:"other_config"`
	// Datapaths maps a datapath type ("system") to its Datapath row.
	Datapaths map[string]string `ovsdb:"datapaths"`
}

// Bridge is a row of the Bridge table.
type Bridge struct {
	UUID        string            `ovsdb:"_uuid"`
	Name        string            `ovsdb:"name"`
	Ports       []string          `ovsdb:"ports"`      // Port UUIDs
	Controller  []string          `ovsdb:"controller"` // Controller UUIDs
	FailMode    *string           `ovsdb:"fail_mode"`  // standalone, secure or unset
	Protocols   []string          `ovsdb:"protocols"`  // OpenFlow10 … OpenFlow15; empty = default
	OtherConfig map[string]string `ovsdb:"other_config"`
	DatapathID  *string           `ovsdb:"datapath_id"` // written by the switch: 16 hex digits
	DatapathTyp string            `ovsdb:"datapath_type"`
	Mirrors     []string          `ovsdb:"mirrors"` // Mirror UUIDs (mirror.go)
	// Sampling and export rows (sample.go).
	SFlow   *string `ovsdb:"sflow"`
	NetFlow *string `ovsdb:"netflow"`
	IPFIX   *string `ovsdb:"ipfix"`
	// Spanning tree (stp.go, rstp.go): the switch writes Status and
	// RSTPStatus.
	STPEnable  bool `ovsdb:"stp_enable"`
	RSTPEnable bool `ovsdb:"rstp_enable"`
	// McastSnoopingEnable turns multicast snooping on (mcast.go).
	McastSnoopingEnable bool              `ovsdb:"mcast_snooping_enable"`
	Status              map[string]string `ovsdb:"status"`
	RSTPStatus          map[string]string `ovsdb:"rstp_status"`
}

// Port is a row of the Port table: one or more interfaces (more is a bond).
type Port struct {
	UUID        string            `ovsdb:"_uuid"`
	Name        string            `ovsdb:"name"`
	Interfaces  []string          `ovsdb:"interfaces"` // Interface UUIDs
	OtherConfig map[string]string `ovsdb:"other_config"`
	// VLAN settings: tag, trunks, vlan_mode, and a dot1q-tunnel port's
	// cvlans (its other_config:qinq-ethtype is in OtherConfig).
	Tag      *int    `ovsdb:"tag"`
	Trunks   []int   `ovsdb:"trunks"`
	VLANMode *string `ovsdb:"vlan_mode"`
	CVLANs   []int   `ovsdb:"cvlans"`
	// QoS is the port's QoS row (egress queues), if any.
	QoS *string `ovsdb:"qos"`
	// Bond settings, for a Port with several Interfaces (bond.go).
	BondMode      *string `ovsdb:"bond_mode"`
	LACP          *string `ovsdb:"lacp"`
	BondUpdelay   int     `ovsdb:"bond_updelay"`
	BondDowndelay int     `ovsdb:"bond_downdelay"`
	// Status and Statistics are written by the switch (stp.go), and
	// RSTPStatus and RSTPStatistics (rstp.go).
	Status         map[string]string `ovsdb:"status"`
	Statistics     map[string]int    `ovsdb:"statistics"`
	RSTPStatus     map[string]string `ovsdb:"rstp_status"`
	RSTPStatistics map[string]int    `ovsdb:"rstp_statistics"`
}

// Interface is a row of the Interface table. The switch writes Ofport,
// Ifindex, MACInUse, AdminState, LinkState, LACPCurrent and Error.
type Interface struct {
	UUID          string            `ovsdb:"_uuid"`
	Name          string            `ovsdb:"name"`
	Type          string            `ovsdb:"type"` // "" or system, internal, ...
	Options       map[string]string `ovsdb:"options"`
	OtherConfig   map[string]string `ovsdb:"other_config"` // lacp-port-id etc. (bond_lacp.go)
	OfportRequest *int              `ovsdb:"ofport_request"`
	Ofport        *int              `ovsdb:"ofport"` // -1 when the interface could not be added
	Ifindex       *int              `ovsdb:"ifindex"`
	MACInUse      *string           `ovsdb:"mac_in_use"`
	AdminState    *string           `ovsdb:"admin_state"`
	LinkState     *string           `ovsdb:"link_state"`
	// LACPCurrent is lacp_current: a LACP bond member's partner
	// information is current (nil when the member runs no LACP).
	LACPCurrent *bool   `ovsdb:"lacp_current"`
	Error       *string `ovsdb:"error"`
	// Ingress policing: kbit/s and kbit (0: off).
	IngressPolicingRate  int `ovsdb:"ingress_policing_rate"`
	IngressPolicingBurst int `ovsdb:"ingress_policing_burst"`
}

// Controller is a row of the Controller table.
type Controller struct {
	UUID            string `ovsdb:"_uuid"`
	Target          string `ovsdb:"target"`
	InactivityProbe *int   `ovsdb:"inactivity_probe"` // milliseconds
	MaxBackoff      *int   `ovsdb:"max_backoff"`      // milliseconds
	IsConnected     bool   `ovsdb:"is_connected"`
}

// QoS is a row of the QoS table: a port's egress queueing discipline.
type QoS struct {
	UUID        string            `ovsdb:"_uuid"`
	Type        string            `ovsdb:"type"` // linux-htb, linux-hfsc, ...
	OtherConfig map[string]string `ovsdb:"other_config"`
	Queues      map[int]string    `ovsdb:"queues"` // queue id -> Queue UUID
}

// Queue is a row of the Queue table.
type Queue struct {
	UUID        string            `ovsdb:"_uuid"`
	OtherConfig map[string]string `ovsdb:"other_config"`
	DSCP        *int              `ovsdb:"dscp"`
}

// Datapath is a row of the Datapath table: per datapath type, its
// conntrack zones' configuration.
type Datapath struct {
	UUID            string         `ovsdb:"_uuid"`
	DatapathVersion string         `ovsdb:"datapath_version"`
	CTZones         map[int]string `ovsdb:"ct_zones"` // zone -> CT_Zone UUID
	// Capabilities is written by the switch (datapath_table.go).
	Capabilities map[string]string `ovsdb:"capabilities"`
}

// CTZone is a row of the CT_Zone table.
type CTZone struct {
	UUID          string  `ovsdb:"_uuid"`
	TimeoutPolicy *string `ovsdb:"timeout_policy"` // CT_Timeout_Policy UUID
}

// CTTimeoutPolicy is a row of the CT_Timeout_Policy table.
type CTTimeoutPolicy struct {
	UUID     string         `ovsdb:"_uuid"`
	Timeouts map[string]int `ovsdb:"timeouts"` // seconds
}

// ClientModel returns the libovsdb client model of the tables this
// package reads and writes.
func ClientModel() (model.ClientDBModel, error) {
	return model.NewClientDBModel(DatabaseName, map[string]model.Model{
		TableOpenSwitch: &OpenvSwitch{},
		TableBridge:     &Bridge{},
		TablePort:       &Port{},
		TableInterface:  &Interface{},
		TableController: &Controller{},
		TableSFlow:      &SFlow{},
		TableNetFlow:    &NetFlow{},
		TableIPFIX:      &IPFIX{},
		TableFSCS:       &FlowSampleCollectorSet{},
		TableDatapath:   &Datapath{},
		TableCTZone:     &CTZone{},
		TableCTTimeout:  &CTTimeoutPolicy{},
		TableQoS:        &QoS{},
		TableQueue:      &Queue{},
		TableMirror:     &Mirror{},
	})
}
