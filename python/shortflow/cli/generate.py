"""`shortflow generate`: a synthetic trace of interleaved short flows with known losses, run
through the simulator (`shortflow_sim::generate`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from shortflow.cli.common import USAGE, check_output_file, clip, examples, fail, is_stdout, progress, write_json
from shortflow.exceptions import ShortflowError
from shortflow.units import parse_duration


def register(app: typer.Typer) -> None:
    @app.command("generate", epilog=examples("shortflow generate trace.pcap",
                                             "shortflow generate trace.pcapng --format pcapng --connections 10000 --syn-loss 0.05"))
    def generate_cmd(
        output: Annotated[Path, typer.Argument(help="capture file to write")],
        connections: Annotated[int, typer.Option(min=1, max=100_000_000, help="connections to generate")] = 1000,
        seed: Annotated[int, typer.Option(min=0, max=2**64 - 1, help="random seed (same seed, same file)")] = 1,
        arrivals: Annotated[float, typer.Option("--arrivals-per-s", min=0.001, max=1e9, help="new connections per second")] = 2000.0,
        rtt_min: Annotated[str, typer.Option(help="smallest RTT a connection draws (uniform to --rtt-max)")] = "10ms",
        rtt_max: Annotated[str, typer.Option(help="largest RTT a connection draws")] = "200ms",
        syn_loss: Annotated[float, typer.Option(min=0.0, max=0.999, help="loss probability of each SYN")] = 0.01,
        synack_loss: Annotated[float, typer.Option(min=0.0, max=0.999, help="loss probability of each SYN/ACK")] = 0.005,
        ack_loss: Annotated[float, typer.Option(min=0.0, max=0.999, help="loss probability of each client pure ACK (the handshake's third packet and later ones)")] = 0.0,
        client_rto: Annotated[str, typer.Option(help="client's initial SYN RTO (1s RFC 6298, 3s RFC 2988)")] = "1s",
        server_rto: Annotated[str, typer.Option(help="server's initial SYN/ACK RTO")] = "1s",
        vantage: Annotated[str, typer.Option(help="capture point: client or server")] = "client",
        ipv6: Annotated[bool, typer.Option("--ipv6", help="IPv6 instead of IPv4")] = False,
        link: Annotated[str, typer.Option(help="ethernet, raw, null, loop, sll, sll2, ipv4, ipv6")] = "ethernet",
        vlan: Annotated[Optional[int], typer.Option(min=0, max=4095, help="802.1Q VLAN id (ethernet)")] = None,
        fmt: Annotated[str, typer.Option("--format", help="pcap or pcapng")] = "pcap",
        micro: Annotated[bool, typer.Option("--micro", help="microsecond pcap timestamps (default ns)")] = False,
        big_endian: Annotated[bool, typer.Option("--big-endian", help="big-endian pcap headers")] = False,
        snaplen: Annotated[int, typer.Option(min=20, max=262_144, help="bytes captured per packet")] = 65535,
        gzip: Annotated[bool, typer.Option("--gzip", help="gzip the file")] = False,
    ) -> None:
        """Write a trace whose handshake losses are known, and print that ground truth (JSON)."""
        if is_stdout(output):
            fail("OUTPUT -: the trace is not written to standard output; give a file name", USAGE)
        check_output_file(output, "OUTPUT")
        try:
            durations = {k: parse_duration(v, what=f"--{k.replace('_s', '').replace('_', '-')}")
                         for k, v in (("rtt_min_s", rtt_min), ("rtt_max_s", rtt_max),
                                      ("client_rto_s", client_rto), ("server_rto_s", server_rto))}
        except ValueError as e:
            fail(clip(e), USAGE)
        for k, v in durations.items():
            if not 0 < v <= 3600:
                fail(f"--{k.replace('_s', '').replace('_', '-')}: {v:g}s is outside 1ns to 1h", USAGE)
        from shortflow.analyze import generate

        try:
            with progress(f"generating {connections:,} connections"):
                truth = generate(
                    output, connections=connections, seed=seed, arrivals_per_s=arrivals, **durations,
                    syn_loss=syn_loss, synack_loss=synack_loss, ack_loss=ack_loss,
                    vantage=vantage, ipv6=ipv6, link=link, vlan=vlan, format=fmt, nanosecond=not micro,
                    big_endian=big_endian, snaplen=snaplen, gzip=gzip,
                )
        except (ValueError, OverflowError, ShortflowError) as e:  # a bad option, or a file that cannot be written
            fail(clip(e), USAGE)
        except KeyboardInterrupt:
            # Half a trace is no trace: the file goes (its writer stops as the process ends).
            output.unlink(missing_ok=True)
            raise
        write_json("-", {"file": str(output), **truth})
