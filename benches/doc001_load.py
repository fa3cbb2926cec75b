"""Document 001's load: our calibrated rate at 50 % against PackMime's nominal offered load
(rate x the response-size distribution's mean), and the rates at which Reno's mean duration
reaches the paper's 297 ms. Run: .venv/bin/python benches/doc001_load.py [SECONDS]
(figures in BENCHMARKS.md): SECONDS of arrivals (300, the paper's; the long uncongested run
is ten times as long); the test suite's smoke run gives a few."""
import statistics
import sys
import time

from shortflow.scenario import Scenario
from shortflow.simulate import simulate

S = "001-sfr-web"
t0 = time.time()
span = float(sys.argv[1]) if len(sys.argv) > 1 else 300.0
base = ['dumbbell.delay="10ms"', f'workload.duration="{span:g}s"', 'seed=1']
reno = simulate(Scenario.builtin(S, [*base, 'workload.load="50%"']))
cal = reno.summary["calibration"]
rate = cal["connections_per_second"]
done = [c["complete_s"] for c in reno.connections if c["complete_s"] is not None]
resp = [c["response_bytes"] for c in reno.connections]
print("calibration", {k: v for k, v in cal.items() if not isinstance(v, list)})
print(f"rate {rate:.2f}/s conns {len(reno.connections)} mean dur {statistics.mean(done):.3f} mean resp {statistics.mean(resp):.0f} B "
      f"offered {rate*statistics.mean(resp)*8/5e6*100:.1f} % of 5 Mbit/s", flush=True)
# The same rate's response sizes over a long uncongested run: the distribution's mean.
big = simulate(Scenario.builtin(S, ['dumbbell.bandwidth="10Gbit"', f'workload.duration="{10 * span:g}s"',
                                    f'time_limit="{10 * span + 1000:g}s"', 'seed=2']), rate=rate)
r2 = [c["response_bytes"] for c in big.connections]
m = statistics.mean(r2)
print(f"long run: {len(r2)} conns mean resp {m:.0f} B median {statistics.median(r2):.0f} max {max(r2)} -> nominal load at rate {rate:.2f}: {rate*m*8/5e6*100:.1f} %", flush=True)
for mult in (1.3, 1.6):
    r = simulate(Scenario.builtin(S, base), rate=rate * mult)
    d = [c["complete_s"] for c in r.connections if c["complete_s"] is not None]
    busy = [link.get("utilisation", link.get("busy")) for link in r.summary["bottleneck"]]
    print(f"rate x{mult}: {rate*mult:.2f}/s mean dur {statistics.mean(d):.3f} s, utilisation c2s/s2c {busy}", flush=True)
print("wall", time.time() - t0)
