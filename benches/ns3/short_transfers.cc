// The peer of `shortflow simulate` in BENCHMARKS.md: N sequential short transfers over
// client -- link -- router -- link -- server in ns-3 (3.37, Debian's libns3-dev), the same
// shape as benches/sim_vs_ns3.py's scenario: each connection is new, the client sends the
// request, the server answers with the response and closes, the client closes once it has
// the whole response and then opens the next connection.
//
//   short_transfers N RTT_MS RATE_MBPS REQUEST_B RESPONSE_B
// prints: connections, completed, mean completion time (s, from connect to last byte).
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"

#include <cstdio>
#include <cstdlib>

using namespace ns3;

namespace {

struct Run {
    uint32_t total, done = 0, request, response;
    Address server;
    Ptr<Node> client;
    double sum = 0;
    std::vector<uint8_t> buf;
};
Run g;

void ClientRecv(Ptr<Socket> s);

void StartNext() {
    if (g.done >= g.total)
        return;
    Ptr<Socket> s = Socket::CreateSocket(g.client, TcpSocketFactory::GetTypeId());
    s->Bind();
    double t0 = Simulator::Now().GetSeconds();
    auto got = std::make_shared<uint32_t>(0);
    s->SetConnectCallback(
        [](Ptr<Socket> c) { c->Send(g.buf.data(), g.request, 0); },
        [](Ptr<Socket>) { std::fprintf(stderr, "connect failed\n"); });
    s->SetRecvCallback([t0, got](Ptr<Socket> c) {
        Ptr<Packet> p;
        while ((p = c->Recv()))
            *got += p->GetSize();
        if (*got >= g.response) {
            g.sum += Simulator::Now().GetSeconds() - t0;
            g.done++;
            c->Close();
            Simulator::ScheduleNow(&StartNext);
        }
    });
    s->Connect(g.server);
}

void ServerAccept(Ptr<Socket> s, const Address&) {
    auto got = std::make_shared<uint32_t>(0);
    s->SetRecvCallback([got](Ptr<Socket> c) {
        Ptr<Packet> p;
        while ((p = c->Recv()))
            *got += p->GetSize();
        if (*got >= g.request) {
            c->Send(Create<Packet>(g.response));
            c->Close();
        }
    });
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: %s N RTT_MS RATE_MBPS REQUEST_B RESPONSE_B\n", argv[0]);
        return 2;
    }
    g.total = std::atoi(argv[1]);
    double rtt_ms = std::atof(argv[2]);
    std::string rate = std::string(argv[3]) + "Mbps";
    g.request = std::atoi(argv[4]);
    g.response = std::atoi(argv[5]);
    g.buf.assign(g.request, 'x');

    // Linux-like start: IW 10, MSS 1460, NewReno, no delayed-ACK pauses beyond ns-3's own.
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1460));
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1 << 20));

    NodeContainer nodes;
    nodes.Create(3);
    PointToPointHelper link;
    link.SetDeviceAttribute("DataRate", StringValue(rate));
    // The two-way delay split over the four crossings, as the shortflow simulator does.
    link.SetChannelAttribute("Delay", TimeValue(MilliSeconds(rtt_ms / 4)));
    NetDeviceContainer a = link.Install(nodes.Get(0), nodes.Get(1));
    NetDeviceContainer b = link.Install(nodes.Get(1), nodes.Get(2));
    InternetStackHelper stack;
    stack.Install(nodes);
    Ipv4AddressHelper ip;
    ip.SetBase("10.1.1.0", "255.255.255.0");
    ip.Assign(a);
    ip.SetBase("10.2.1.0", "255.255.255.0");
    Ipv4InterfaceContainer sb = ip.Assign(b);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    Ptr<Socket> listener = Socket::CreateSocket(nodes.Get(2), TcpSocketFactory::GetTypeId());
    listener->Bind(InetSocketAddress(Ipv4Address::GetAny(), 80));
    listener->Listen();
    listener->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(), MakeCallback(&ServerAccept));
    g.server = InetSocketAddress(sb.GetAddress(1), 80);
    g.client = nodes.Get(0);

    Simulator::Schedule(Seconds(0.0), &StartNext);
    Simulator::Run();
    std::printf("%u %u %.6f\n", g.total, g.done, g.done ? g.sum / g.done : 0.0);
    Simulator::Destroy();
    return 0;
}
