// The peer of shortflow's web-traffic benchmark (issue 9): the same dumbbell and the same
// list of flows, replayed with ns-3's own TCP (3.37, Debian's libns3-dev).
//
// N client and N server nodes, each on its own 100 Mbit/s link to a left or right router;
// the routers are joined by RATE_MBPS with DELAY_MS one-way and a DropTail queue of QUEUE
// packets each way. Each flow (a line "start_s pair request_B response_B think_s" of
// FLOWS) opens a connection from client `pair` to server `pair` at its start, sends the
// request; the server answers after the think time with the response and closes; the
// client records the time from connect to the response's last byte.
//
//   web_replay FLOWS N RATE_MBPS DELAY_MS QUEUE END_S
// prints one line per completed flow: "index completion_s", then "# flows completed".
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

using namespace ns3;

namespace {

struct Flow {
    double start;
    uint32_t pair, request, response;
    double think;
    double done = -1;
};

std::vector<Flow> flows;
std::vector<Ptr<Node>> clients;
std::vector<Address> servers;
std::vector<uint8_t> zeros;
// The flow a server-side connection belongs to: the client announces its index in the
// first 4 request bytes (requests are at least 4 B here; shorter ones are padded).
uint32_t Pad(uint32_t r) { return r < 4 ? 4 : r; }

void Send(Ptr<Socket> s, uint32_t bytes) {
    // Sends what the buffer takes now, the rest as space frees.
    auto left = std::make_shared<uint32_t>(bytes);
    auto push = [left](Ptr<Socket> c, uint32_t) {
        while (*left > 0) {
            uint32_t n = std::min<uint32_t>({*left, c->GetTxAvailable(), (uint32_t)zeros.size()});
            if (n == 0)
                return;
            int sent = c->Send(zeros.data(), n, 0);
            if (sent <= 0)
                return;
            *left -= sent;
        }
        c->Close();
    };
    s->SetSendCallback(push);
    push(s, 0);
}

void StartFlow(uint32_t i) {
    Flow& f = flows[i];
    Ptr<Socket> s = Socket::CreateSocket(clients[f.pair], TcpSocketFactory::GetTypeId());
    s->Bind();
    double t0 = Simulator::Now().GetSeconds();
    auto got = std::make_shared<uint32_t>(0);
    s->SetConnectCallback(
        [i](Ptr<Socket> c) {
            std::vector<uint8_t> req(Pad(flows[i].request), 'x');
            std::memcpy(req.data(), &i, 4);
            c->Send(req.data(), req.size(), 0);
        },
        [](Ptr<Socket>) {});
    s->SetRecvCallback([i, t0, got](Ptr<Socket> c) {
        Ptr<Packet> p;
        while ((p = c->Recv()))
            *got += p->GetSize();
        if (flows[i].done < 0 && *got >= flows[i].response) {
            flows[i].done = Simulator::Now().GetSeconds() - t0;
            c->Close();
        }
    });
    s->Connect(servers[f.pair]);
}

void ServerAccept(Ptr<Socket> s, const Address&) {
    auto buf = std::make_shared<std::vector<uint8_t>>();
    auto answered = std::make_shared<bool>(false);
    s->SetRecvCallback([buf, answered](Ptr<Socket> c) {
        Ptr<Packet> p;
        while ((p = c->Recv())) {
            size_t at = buf->size();
            buf->resize(at + p->GetSize());
            p->CopyData(buf->data() + at, p->GetSize());
        }
        if (*answered || buf->size() < 4)
            return;
        uint32_t i;
        std::memcpy(&i, buf->data(), 4);
        if (buf->size() >= Pad(flows[i].request)) {
            *answered = true;
            uint32_t rsp = flows[i].response;
            Simulator::Schedule(Seconds(flows[i].think), [c, rsp]() { Send(c, rsp); });
        }
    });
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 7) {
        std::fprintf(stderr, "usage: %s FLOWS N RATE_MBPS DELAY_MS QUEUE END_S\n", argv[0]);
        return 2;
    }
    std::ifstream in(argv[1]);
    Flow f;
    while (in >> f.start >> f.pair >> f.request >> f.response >> f.think)
        flows.push_back(f);
    uint32_t n = std::atoi(argv[2]);
    std::string rate = std::string(argv[3]) + "Mbps";
    double delay_ms = std::atof(argv[4]);
    std::string queue = std::string(argv[5]) + "p";
    double end_s = std::atof(argv[6]);
    zeros.assign(1 << 16, 0);

    // As shortflow's Linux profile: IW 10, MSS 1460, NewReno, 200 ms minimum RTO.
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1460));
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1 << 20));

    NodeContainer routers, cl, sv;
    routers.Create(2);
    cl.Create(n);
    sv.Create(n);
    InternetStackHelper stack;
    stack.Install(routers);
    stack.Install(cl);
    stack.Install(sv);
    PointToPointHelper bottleneck;
    bottleneck.SetDeviceAttribute("DataRate", StringValue(rate));
    bottleneck.SetChannelAttribute("Delay", TimeValue(MicroSeconds(delay_ms * 1000)));
    bottleneck.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue(queue));
    NetDeviceContainer bd = bottleneck.Install(routers.Get(0), routers.Get(1));
    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue("100Mbps"));
    access.SetChannelAttribute("Delay", TimeValue(MicroSeconds(1)));
    Ipv4AddressHelper ip;
    ip.SetBase("10.0.0.0", "255.255.255.252");
    ip.Assign(bd);
    ip.NewNetwork();
    for (uint32_t i = 0; i < n; i++) {
        ip.Assign(access.Install(cl.Get(i), routers.Get(0)));
        ip.NewNetwork();
        Ipv4InterfaceContainer s = ip.Assign(access.Install(sv.Get(i), routers.Get(1)));
        ip.NewNetwork();
        clients.push_back(cl.Get(i));
        servers.push_back(InetSocketAddress(s.GetAddress(0), 80));
        Ptr<Socket> l = Socket::CreateSocket(sv.Get(i), TcpSocketFactory::GetTypeId());
        l->Bind(InetSocketAddress(Ipv4Address::GetAny(), 80));
        l->Listen();
        l->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(), MakeCallback(&ServerAccept));
    }
    // Only the bottleneck queues: no traffic-control layer in front of the devices.
    TrafficControlHelper tch;
    tch.Uninstall(bd);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    for (uint32_t i = 0; i < flows.size(); i++)
        Simulator::Schedule(Seconds(flows[i].start), &StartFlow, i);
    Simulator::Stop(Seconds(end_s));
    Simulator::Run();
    uint32_t done = 0;
    for (uint32_t i = 0; i < flows.size(); i++)
        if (flows[i].done >= 0) {
            std::printf("%u %.6f\n", i, flows[i].done);
            done++;
        }
    std::printf("# %zu %u\n", flows.size(), done);
    Simulator::Destroy();
    return 0;
}
