package ofproto

import (
	"encoding/binary"
	"testing"
)

// TestControllerUserdataKeepsBridgeAndControllerID: a controller2
// userdata carries both the controller id ([6:8]) and the bridge number
// ([24:26]); neither may be read for the other, or a packet-in from the
// second bridge on ovs-system goes to the wrong bridge.
func TestControllerUserdataKeepsBridgeAndControllerID(t *testing.T) {
	ud := make([]byte, ctrlHeaderLen)
	ud[0], ud[1], ud[2] = UserdataController2, ReasonAction, 4
	binary.BigEndian.PutUint16(ud[4:], 128)
	binary.BigEndian.PutUint16(ud[6:], 7) // controller id
	binary.BigEndian.PutUint64(ud[8:], 0xabc)
	binary.BigEndian.PutUint16(ud[24:], 3) // bridge
	u, ok := ParseControllerUserdata(ud)
	if !ok || u.Bridge != 3 || u.Table != 4 || u.MaxLen != 128 || u.Cookie != 0xabc {
		t.Fatalf("ParseControllerUserdata = %+v, %v", u, ok)
	}
	ext := parsePacketInExt(ud)
	if ext == nil || ext.ControllerID != 7 {
		t.Fatalf("parsePacketInExt = %+v", ext)
	}
	if _, ok := ParseControllerUserdata(ud[:UserdataLen]); ok {
		t.Error("a controller2 userdata cut to the first header parsed")
	}
	v1 := make([]byte, UserdataLen)
	v1[0] = UserdataController
	binary.BigEndian.PutUint16(v1[6:], 5)
	if u, ok := ParseControllerUserdata(v1); !ok || u.Bridge != 5 {
		t.Errorf("controller1 userdata = %+v, %v", u, ok)
	}
}
