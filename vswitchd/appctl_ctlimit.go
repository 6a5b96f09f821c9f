package vswitchd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/govswitch/govswitch/datapath"
)

// The dpctl conntrack-limit commands: per-zone connection limits in the
// kernel's ovs_ct_limit family, with ovs-dpctl's arguments and output.

// ctLimiter returns the datapath's zone limits and the arguments after an
// optional leading DP (an argument without "=", as ovs-dpctl tells them).
func (d *Daemon) ctLimiter(cmd string, args []string) (datapath.CTLimiter, []string, error) {
	bk := d.Backer()
	if bk == nil {
		return nil, nil, fmt.Errorf("%s: no datapath", cmd)
	}
	if len(args) > 0 && !strings.Contains(args[0], "=") {
		name := args[0]
		if _, dp, ok := strings.Cut(name, "@"); ok {
			name = dp
		}
		if name != bk.DP.Name() && d.Bridge(name) == nil {
			return nil, nil, fmt.Errorf("%s: no datapath %s", cmd, args[0])
		}
		args = args[1:]
	}
	l, ok := bk.DP.(datapath.CTLimiter)
	if !ok {
		return nil, nil, fmt.Errorf("%s: datapath %s has no conntrack zone limits", cmd, bk.DP.Name())
	}
	return l, args, nil
}

// parseZoneList reads "zone=N1[,N2]...".
func parseZoneList(arg string) ([]uint16, error) {
	v, ok := strings.CutPrefix(arg, "zone=")
	if !ok {
		return nil, fmt.Errorf("invalid argument %s", arg)
	}
	var zones []uint16
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.ParseUint(s, 10, 16)
		if err != nil {
			return nil, errors.New("invalid zone")
		}
		zones = append(zones, uint16(n))
	}
	return zones, nil
}

// parseZoneLimit reads "zone=N,limit=L" in either order.
func parseZoneLimit(arg string) (datapath.ZoneLimit, error) {
	var z datapath.ZoneLimit
	var haveZone, haveLimit bool
	for _, kv := range strings.Split(arg, ",") {
		k, v, _ := strings.Cut(kv, "=")
		if v == "" {
			return z, fmt.Errorf("field %s missing value", k)
		}
		switch k {
		case "zone":
			n, err := strconv.ParseUint(v, 10, 16)
			if err != nil {
				return z, fmt.Errorf("failed to parse field %s", k)
			}
			z.Zone, haveZone = uint16(n), true
		case "limit":
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return z, fmt.Errorf("failed to parse field %s", k)
			}
			z.Limit, haveLimit = uint32(n), true
		default:
			return z, fmt.Errorf("invalid zone limit field: %s", k)
		}
	}
	if !haveZone || !haveLimit {
		return z, errors.New("failed to parse zone limit")
	}
	return z, nil
}

// dpctlCtSetLimits is dpctl/ct-set-limits [DP] [default=L] [zone=N,limit=L]...
func (d *Daemon) dpctlCtSetLimits(args []string) (string, error) {
	l, args, err := d.ctLimiter("dpctl/ct-set-limits", args)
	if err != nil {
		return "", err
	}
	var def *uint32
	if len(args) > 0 && strings.HasPrefix(args[0], "default=") {
		n, err := strconv.ParseUint(args[0][len("default="):], 10, 32)
		if err != nil {
			return "", errors.New("invalid default limit")
		}
		v := uint32(n)
		def, args = &v, args[1:]
	}
	var zones []datapath.ZoneLimit
	for _, a := range args {
		z, err := parseZoneLimit(a)
		if err != nil {
			return "", err
		}
		zones = append(zones, z)
	}
	if err := l.SetCTLimits(def, zones); err != nil {
		return "", fmt.Errorf("failed to set conntrack limit (%v)", err)
	}
	return "", nil
}

// dpctlCtDelLimits is dpctl/ct-del-limits [DP] zone=N1[,N2]...
func (d *Daemon) dpctlCtDelLimits(args []string) (string, error) {
	l, args, err := d.ctLimiter("dpctl/ct-del-limits", args)
	if err != nil {
		return "", err
	}
	if len(args) != 1 {
		return "", errors.New("dpctl/ct-del-limits: want [dp] zone=N1[,N2]...")
	}
	zones, err := parseZoneList(args[0])
	if err != nil {
		return "", err
	}
	if err := l.DelCTLimits(zones); err != nil {
		return "", fmt.Errorf("failed to delete conntrack limit (%v)", err)
	}
	return "", nil
}

// dpctlCtGetLimits is dpctl/ct-get-limits [DP] [zone=N1[,N2]...]: the
// default limit, then each zone's limit and count.
func (d *Daemon) dpctlCtGetLimits(args []string) (string, error) {
	l, args, err := d.ctLimiter("dpctl/ct-get-limits", args)
	if err != nil {
		return "", err
	}
	var zones []uint16
	switch len(args) {
	case 0:
	case 1:
		if zones, err = parseZoneList(args[0]); err != nil {
			return "", err
		}
	default:
		return "", errors.New("dpctl/ct-get-limits: want [dp] [zone=N1[,N2]...]")
	}
	def, out, err := l.GetCTLimits(zones)
	if err != nil {
		return "", fmt.Errorf("failed to get conntrack limit %v", err)
	}
	return formatZoneLimits(def, out), nil
}

func formatZoneLimits(def uint32, zones []datapath.ZoneLimit) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "default limit=%d\n", def)
	for _, z := range zones {
		fmt.Fprintf(&sb, "zone=%d,limit=%d,count=%d\n", z.Zone, z.Limit, z.Count)
	}
	return sb.String()
}
