# An os-ken app over OpenFlow 1.3 for TestConnOsKenPause: it asks for
# NXT_PACKET_IN2, installs controller(userdata=01.02.03,pause),output:2
# for port 1 and output:1 for port 2, and answers every packet-in2 that
# carries a continuation with NXT_RESUME built from the packet-in2's own
# properties (os-ken has no NXT_RESUME class: it is an experimenter
# message of the same property list).
import struct

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.ofproto import nicira_ext, ofproto_common, ofproto_v1_3

NXT_RESUME = 28
RESUME_PROPS = (nicira_ext.NXPINT_PACKET, nicira_ext.NXPINT_TABLE_ID, nicira_ext.NXPINT_COOKIE,
                nicira_ext.NXPINT_REASON, nicira_ext.NXPINT_METADATA, nicira_ext.NXPINT_CONTINUATION)


class Pause(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def flow(self, dp, priority, match, actions):
        p = dp.ofproto_parser
        inst = [p.OFPInstructionActions(dp.ofproto.OFPIT_APPLY_ACTIONS, actions)]
        dp.send_msg(p.OFPFlowMod(datapath=dp, priority=priority, match=match, instructions=inst))

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def features(self, ev):
        dp = ev.msg.datapath
        p = dp.ofproto_parser
        # NXPIF_NXT_PACKET_IN2; os-ken names only formats 0 and 1.
        dp.send_msg(p.NXTSetPacketInFormatMsg(dp, 2))
        self.flow(dp, 10, p.OFPMatch(in_port=1),
                  [p.NXActionController2(userdata=[1, 2, 3], pause=True), p.OFPActionOutput(2)])
        self.flow(dp, 10, p.OFPMatch(in_port=2), [p.OFPActionOutput(1)])
        print("PAUSE connected", flush=True)

    @set_ev_cls(ofp_event.EventNXTPacketIn2, MAIN_DISPATCHER)
    def packet_in2(self, ev):
        msg = ev.msg
        dp = msg.datapath
        userdata = bytes(msg.userdata or b"").hex()
        print("PAUSE packet-in2 userdata=%s continuation=%s reason=%s" %
              (userdata, msg.continuation is not None, msg.reason), flush=True)
        if msg.continuation is None:
            return
        body = bytearray()
        for prop in msg.properties:
            if prop.type not in RESUME_PROPS:
                continue
            raw = struct.pack("!HH", prop.type, 4 + len(prop.data)) + bytes(prop.data)
            body += raw + b"\0" * (-len(raw) % 8)
        dp.send_msg(dp.ofproto_parser.OFPExperimenter(dp, ofproto_common.NX_EXPERIMENTER_ID, NXT_RESUME, bytes(body)))
        print("PAUSE resumed", flush=True)
