package vlog

import (
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// syslogSink sends rendered syslog lines; Send gets the full priority
// (facility<<3 | severity).
type syslogSink interface {
	Send(pri int, now time.Time, line string)
	Close() error
}

const facilityDaemon = 3

var facilities = map[string]int{
	"kern": 0, "user": 1, "mail": 2, "daemon": 3, "auth": 4, "syslog": 5, "lpr": 6, "news": 7,
	"uucp": 8, "clock": 9, "authpriv": 10, "ftp": 11, "ntp": 12, "audit": 13, "alert": 14, "clock2": 15,
	"local0": 16, "local1": 17, "local2": 18, "local3": 19, "local4": 20, "local5": 21, "local6": 22, "local7": 23,
}

func parseFacility(s string) (int, bool) {
	f, ok := facilities[strings.ToLower(s)]
	return f, ok
}

// syslogPriority is the syslog severity of a level, as OVS maps them.
func syslogPriority(l Level) int {
	switch l {
	case Emer:
		return 0 // LOG_EMERG
	case Err:
		return 3 // LOG_ERR
	case Warn:
		return 4 // LOG_WARNING
	case Info:
		return 6 // LOG_INFO
	}
	return 7 // LOG_DEBUG
}

// netSyslog writes BSD-syslog datagrams ("<PRI>Mmm dd hh:mm:ss
// TAG[PID]: line") to each of its targets: the local syslog socket
// (/dev/log) and any --syslog-target. A target that is not there (no
// syslog daemon, as in a test bed) is dialed again at most every few
// seconds, and until then its lines are dropped.
type netSyslog struct {
	tag     string
	targets []*syslogTarget
}

type syslogTarget struct {
	network, addr string
	conn          net.Conn
	lastDial      time.Time
}

func (s *netSyslog) Send(pri int, now time.Time, line string) {
	msg := fmt.Sprintf("<%d>%s %s[%d]: %s", pri, now.Format(time.Stamp), s.tag, os.Getpid(), line)
	for _, t := range s.targets {
		if t.conn == nil {
			if time.Since(t.lastDial) < 5*time.Second {
				continue
			}
			t.lastDial = time.Now()
			c, err := net.DialTimeout(t.network, t.addr, time.Second)
			if err != nil {
				continue
			}
			t.conn = c
		}
		t.conn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := t.conn.Write([]byte(msg)); err != nil {
			t.conn.Close()
			t.conn = nil
		}
	}
}

func (s *netSyslog) Close() error {
	for _, t := range s.targets {
		if t.conn != nil {
			t.conn.Close()
			t.conn = nil
		}
	}
	return nil
}

// OpenSyslog turns the syslog destination on: lines go to the local
// syslog socket socketPath (normally /dev/log; "" for none) and, if
// target is set, as UDP datagrams to target (HOST:PORT, as
// --syslog-target). Nothing is dialed before the first line, and an
// absent syslog daemon costs nothing but the dropped lines.
func (l *Log) OpenSyslog(socketPath, target string) error {
	s := &netSyslog{tag: l.program}
	if socketPath != "" {
		s.targets = append(s.targets, &syslogTarget{network: "unixgram", addr: socketPath})
	}
	if target != "" {
		if _, _, err := net.SplitHostPort(target); err != nil {
			return fmt.Errorf("syslog target %q: want HOST:PORT", target)
		}
		s.targets = append(s.targets, &syslogTarget{network: "udp", addr: target})
	}
	l.mu.Lock()
	old := l.syslog
	l.syslog = s
	l.active[Syslog].Store(len(s.targets) > 0)
	l.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}
