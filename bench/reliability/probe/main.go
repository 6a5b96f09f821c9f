// Command probe times govswitchd's control plane without starting a
// process per sample (in the UML bed, fork and exec of ovs-appctl under
// load cost more than the daemon's answer). Each sample opens a new
// connection, as ovs-appctl and ovs-ofctl do:
//
//   - appctl: the unixctl socket, a JSON-RPC "version" request and its
//     reply;
//
//   - ofctl: the bridge's mgmt socket, the OpenFlow 1.3 hello exchange,
//     then a features request and its reply (what `ovs-ofctl show` starts
//     with).
//
//     probe -rundir DIR [-bridge br0] [-T SECS] [-every DURATION] -o DIR
//
// It appends one latency per line, in ms, to DIR/probe_appctl.ms and
// DIR/probe_ofctl.ms (-1 for a failed sample, with a 5 s timeout each),
// until -T seconds have passed or it is sent SIGTERM.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/govswitch/govswitch/ofproto/openflow"
	"github.com/govswitch/govswitch/unixctl"
)

func main() {
	rundir := flag.String("rundir", "/var/run/openvswitch", "govswitchd's rundir")
	bridge := flag.String("bridge", "br0", "bridge whose mgmt socket to probe")
	secs := flag.Float64("T", 10, "seconds to probe for")
	every := flag.Duration("every", 50*time.Millisecond, "pause between samples")
	outDir := flag.String("o", ".", "output folder")
	flag.Parse()
	if err := run(*rundir, *bridge, *outDir, time.Duration(*secs*float64(time.Second)), *every); err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(1)
	}
}

func run(rundir, bridge, outDir string, d, every time.Duration) error {
	pid, err := unixctl.ReadPidfile(filepath.Join(rundir, "ovs-vswitchd.pid"))
	if err != nil {
		return err
	}
	ctl := unixctl.SocketPath(rundir, "ovs-vswitchd", pid)
	mgmt := filepath.Join(rundir, bridge+".mgmt")
	fa, err := os.OpenFile(filepath.Join(outDir, "probe_appctl.ms"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer fa.Close()
	fo, err := os.OpenFile(filepath.Join(outDir, "probe_ofctl.ms"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer fo.Close()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	end := time.After(d)
	for {
		sample(fa, func() error { return appctlVersion(ctl) })
		sample(fo, func() error { return ofctlFeatures(mgmt) })
		select {
		case <-stop:
			return nil
		case <-end:
			return nil
		case <-time.After(every):
		}
	}
}

func sample(f *os.File, probe func() error) {
	t0 := time.Now()
	if err := probe(); err != nil {
		fmt.Fprintln(f, -1)
		fmt.Fprintln(os.Stderr, "probe:", err)
		return
	}
	fmt.Fprintf(f, "%.2f\n", float64(time.Since(t0).Microseconds())/1000)
}

func appctlVersion(path string) error {
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := json.NewEncoder(c).Encode(map[string]any{"method": "version", "params": []string{}, "id": 0}); err != nil {
		return err
	}
	var reply struct {
		Result any `json:"result"`
		Error  any `json:"error"`
	}
	if err := json.NewDecoder(c).Decode(&reply); err != nil {
		return err
	}
	if reply.Error != nil || reply.Result == nil {
		return fmt.Errorf("version: error %v", reply.Error)
	}
	return nil
}

func ofctlFeatures(path string) error {
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	hello, _ := (&openflow.Hello{Envelope: openflow.Envelope{Version: openflow.Version13, Xid: 1},
		Versions: openflow.VersionBitmap(openflow.Version13)}).Append(nil)
	req, _ := (&openflow.FeaturesRequest{Envelope: openflow.Envelope{Version: openflow.Version13, Xid: 2}}).Append(nil)
	if _, err := c.Write(append(hello, req...)); err != nil {
		return err
	}
	fr := openflow.NewFramer(0)
	for {
		raw, err := fr.ReadMsg(c)
		if err != nil {
			return err
		}
		m, err := openflow.Decode(raw)
		if err != nil {
			return err
		}
		switch m := m.(type) {
		case *openflow.FeaturesReply:
			return nil
		case *openflow.ErrorMsg:
			return fmt.Errorf("features request: error %d/%d", m.Type, m.Code)
		case *openflow.Hello, *openflow.EchoRequest:
		default:
			return errors.New("unexpected reply to a features request")
		}
	}
}
