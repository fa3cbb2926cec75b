"""`shortflow watch`: the analyzer on a live interface. Packets come from the kernel's ring
(libpcap, TPACKET_V3) into the same tracker and time account as `analyze`; each connection
is counted when it ends — in Prometheus metrics, in rotated Parquet files, on a one-screen
view — so that a later look never has to take a count back."""

from shortflow.watch.live import LiveAnalysis, WatchConfig

__all__ = ["LiveAnalysis", "WatchConfig"]
