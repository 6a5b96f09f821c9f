# A learning switch for os-ken over OpenFlow 1.4 or 1.5 (OSKEN_OFP=14 or
# 15), for TestConnOsKen: a table-miss flow to the controller, then per
# packet-in learn the source, install a flow for a known destination and
# send the packet on (1.5 packet-outs carry the input port in a match).
import os

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.lib.packet import ethernet, packet
from os_ken.ofproto import ofproto_v1_4, ofproto_v1_5

VERSION = {"14": ofproto_v1_4, "15": ofproto_v1_5}[os.environ.get("OSKEN_OFP", "14")]


class Learn(app_manager.OSKenApp):
    OFP_VERSIONS = [VERSION.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.macs = {}

    def flow(self, dp, priority, match, actions):
        p = dp.ofproto_parser
        inst = [p.OFPInstructionActions(dp.ofproto.OFPIT_APPLY_ACTIONS, actions)]
        dp.send_msg(p.OFPFlowMod(datapath=dp, priority=priority, match=match, instructions=inst))

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def features(self, ev):
        dp = ev.msg.datapath
        p, o = dp.ofproto_parser, dp.ofproto
        self.flow(dp, 0, p.OFPMatch(), [p.OFPActionOutput(o.OFPP_CONTROLLER, o.OFPCML_NO_BUFFER)])
        print("LEARN connected version 0x%02x" % dp.ofproto.OFP_VERSION, flush=True)

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def packet_in(self, ev):
        msg = ev.msg
        dp = msg.datapath
        p, o = dp.ofproto_parser, dp.ofproto
        in_port = msg.match["in_port"]
        eth = packet.Packet(msg.data).get_protocols(ethernet.ethernet)[0]
        self.macs[eth.src] = in_port
        out = self.macs.get(eth.dst, o.OFPP_FLOOD)
        actions = [p.OFPActionOutput(out)]
        if out != o.OFPP_FLOOD:
            self.flow(dp, 1, p.OFPMatch(in_port=in_port, eth_dst=eth.dst), actions)
        if VERSION is ofproto_v1_5:
            po = p.OFPPacketOut(datapath=dp, buffer_id=o.OFP_NO_BUFFER, match=p.OFPMatch(in_port=in_port),
                                actions=actions, data=msg.data)
        else:
            po = p.OFPPacketOut(datapath=dp, buffer_id=o.OFP_NO_BUFFER, in_port=in_port, actions=actions,
                                data=msg.data)
        dp.send_msg(po)
        print("LEARN packet-in %s -> %s on %d, out %d" % (eth.src, eth.dst, in_port, out), flush=True)
