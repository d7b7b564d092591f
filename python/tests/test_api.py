"""kleinrock.sim, compare, algorithms and replay: a scenario as a file, as
TOML text and as a dict give the same run; the tables' schemas are
docs/PYTHON.md's; refusals carry the CLI's sentences; compare's metrics
are the CLI's summary.csv."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pyarrow as pa
import pytest

import kleinrock
from conftest import ROOT, SHORT, cli

#: docs/PYTHON.md's "Schemas", column for column.
SCHEMAS = {
    "flows": "t:double flow:uint32 goodput_bps:double throughput_bps:double cwnd:uint32 ssthresh:uint32 srtt_us:uint32 min_rtt_us:uint32 inflight:uint32 pacing_rate_bps:uint64 delivery_rate_bps:double retransmits:uint64 segs_out:uint64 ca_state:string",
    "queues": "t:double link:string packets:uint32 bytes:uint64 delay_us:uint64 drops:uint64 marks:uint64",
    "pings": "t:double ping:uint32 rtt_ms:double",
    "summary": "flow:uint32 cc:string direction:string rtt_ms:double goodput_bps:double bytes:uint64 segments_sent:uint64 retransmits:uint64 rtos:uint64 tlps:uint64 recoveries:uint64 rtt_p50_ms:double rtt_p95_ms:double rtt_p99_ms:double responses:uint64 response_p50_ms:double response_p95_ms:double completion_s:double?",
    "ping_summary": "ping:uint32 rtt_ms:double sent:uint64 received:uint64 rtt_p50_ms:double rtt_p95_ms:double",
    "udp": "udp:uint32 sent:uint64 goodput_bps:double loss:double",
    "links": "link:string tx_packets:uint64 tx_bytes:uint64 queue_drops:uint64 loss_drops:uint64 marks:uint64",
}
METRICS = "run_id:uint64 algorithm:string {keys}seed:uint64 goodput_bps:double rtt_p50_ms:double rtt_p95_ms:double queue_p95_ms:double retransmits:uint64 jain:double completion_s:double? power:double queue_drops:uint64 loss_drops:uint64 marks:uint64 run:string"


def schema(t: pa.Table) -> str:
    return " ".join("%s:%s%s" % (f.name, f.type, "?" if f.nullable else "") for f in t.schema)


def test_a_file_its_text_and_a_dict_are_one_run(tmp_path: Path) -> None:
    path = tmp_path / "short.toml"
    path.write_text(SHORT)
    as_dict = {
        "duration": "2s",
        "seed": 3,
        "link": {"rate": "10Mbit", "queue": 30, "loss": "0.5%"},
        "flow": [{"cc": "cubic", "rtt": "20ms"}],
        "ping": [{"rtt": "20ms"}],
    }
    runs = [kleinrock.sim(path), kleinrock.sim(str(path)), kleinrock.sim(SHORT), kleinrock.sim(as_dict)]
    first = runs[0]
    assert first.seed == 3 and first.duration_s == 2.0 and first.events > 0
    for r in runs[1:]:
        for name in kleinrock.Results.TABLES:
            assert r.table(name).equals(first.table(name)), name
    # Every table is the documented one, and pandas takes it.
    for name, want in SCHEMAS.items():
        assert schema(first.table(name)) == want, name
        assert len(first.table(name).to_pandas().columns) == len(want.split())
    assert first.flows.num_rows == 20  # a sample every 100 ms, to 2 s
    assert first.summary.column("cc").to_pylist() == ["cubic"]
    assert first.links.column("loss_drops")[0].as_py() > 0
    assert "bottleneck up:" in first.summary_text()


def test_seed_and_overrides_are_the_scenarios_keys(tmp_path: Path) -> None:
    base = kleinrock.sim(SHORT, seed=9, loss="2%", cc="bbr")
    edited = kleinrock.sim(SHORT.replace("seed = 3", "seed = 9").replace('"0.5%"', '"2%"').replace('"cubic"', '"bbr"'))
    assert base.seed == 9
    assert base.summary.equals(edited.summary)
    assert base.summary.column("cc").to_pylist() == ["bbr"]
    dotted = kleinrock.sim(SHORT, **{"link.up.loss": "2%"})
    own = kleinrock.sim(SHORT.replace("[[flow]]", '[link.up]\nloss = "2%"\n[[flow]]'))
    assert dotted.links.equals(own.links) and dotted.flows.equals(own.flows)
    assert not dotted.links.equals(kleinrock.sim(SHORT).links)


def test_the_files_sim_writes_are_the_clis(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(SHORT)
    r = kleinrock.sim(tmp_path / "s.toml")
    r.write(tmp_path / "py")
    done = cli("sim", str(tmp_path / "s.toml"), "--out", str(tmp_path / "cli"), "--quiet")
    assert done.returncode == 0, done.stderr
    for f in ("results.json", "flows.csv", "queues.csv", "pings.csv", "summary.csv"):
        assert (tmp_path / "py" / f).read_bytes() == (tmp_path / "cli" / "s" / f).read_bytes(), f


@pytest.mark.parametrize(
    "text",
    [
        'duration = "2s"\n[link]\nrate = "fast"\n[[flow]]\ncc = "cubic"\nrtt = "20ms"\n',
        SHORT.replace('cc = "cubic"', 'cc = "cubik"'),
        SHORT + "colour = 1\n",
    ],
)
def test_a_bad_scenario_raises_the_clis_sentence(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    done = cli("sim", str(path))
    assert done.returncode == 2
    sentence = done.stderr.strip()
    assert sentence.startswith("error: "), sentence
    with pytest.raises(kleinrock.KleinrockError) as e:
        kleinrock.sim(path)
    assert "error: " + str(e.value) == sentence
    # Text names itself as text, with the same sentence after the name.
    with pytest.raises(kleinrock.KleinrockError) as t:
        kleinrock.sim(text)
    assert str(t.value) == str(e.value).replace(str(path), "<scenario text>")


def test_bad_overrides_and_options_read_as_the_clis(tmp_path: Path) -> None:
    with pytest.raises(kleinrock.KleinrockError, match=r"with loss = lots: `loss` = \"lots\""):
        kleinrock.sim(SHORT, loss="lots")
    path = tmp_path / "s.toml"
    path.write_text(SHORT)
    done = cli("compare", str(path), "--cc", "cubic", "--sweep", "loss=1%,2%,1%", "--quiet", "--out", str(tmp_path / "o"))
    with pytest.raises(kleinrock.KleinrockError) as e:
        kleinrock.compare(path, cc=["cubic"], sweep="loss=1%,2%,1%")
    assert done.stderr.strip() == "error: " + str(e.value)
    with pytest.raises(kleinrock.KleinrockError, match="nothing to compare"):
        kleinrock.compare(path)
    with pytest.raises(kleinrock.KleinrockError, match="runs the simulator only"):
        kleinrock.compare(path, cc=["cubic"], engine="lab")
    with pytest.raises(TypeError):
        kleinrock.sim(3)  # type: ignore[arg-type]
    # A capture has nowhere to go from Python: refused, not ignored; and
    # compare refuses it as the CLI does.
    captured = SHORT + "\n[capture]\nat = \"left\"\n"
    with pytest.raises(kleinrock.KleinrockError, match=r"\[capture\] table asks for a packet capture"):
        kleinrock.sim(captured)
    path.write_text(captured)
    done = cli("compare", str(path), "--cc", "cubic", "--quiet", "--out", str(tmp_path / "c"))
    with pytest.raises(kleinrock.KleinrockError) as c:
        kleinrock.compare(path, cc=["cubic"])
    assert done.stderr.strip() == "error: " + str(c.value)
    assert "compare writes no packet captures" in str(c.value)


def test_compare_returns_the_clis_metrics(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(SHORT)
    cmp = kleinrock.compare(path, cc=["cubic", "bbr"], seeds=[1, 2], sweep=["loss=0.1%,1%"], out=tmp_path / "py")
    done = cli("compare", str(path), "--cc", "cubic,bbr", "--seeds", "1,2", "--sweep", "loss=0.1%,1%",
               "--out", str(tmp_path / "cli"), "--quiet")
    assert done.returncode == 0, done.stderr
    assert schema(cmp.metrics) == METRICS.format(keys="loss:string ")
    assert cmp.metrics.num_rows == 8
    assert cmp.text in done.stdout
    rows = list(csv.DictReader(open(tmp_path / "cli" / "summary.csv")))
    py = cmp.metrics.to_pylist()
    assert len(rows) == len(py)
    for c, p in zip(rows, py):
        assert (c["algorithm"], c["loss"], int(c["seed"]), c["run"]) == (p["algorithm"], p["loss"], p["seed"], p["run"])
        assert c["goodput_bps"] == "%.0f" % p["goodput_bps"]
        for k in ("rtt_p50_ms", "rtt_p95_ms", "queue_p95_ms"):
            assert c[k] == "%.3f" % p[k], k
        assert int(c["retransmits"]) == p["retransmits"] and c["jain"] == "%.4f" % p["jain"]
    # The report is the CLI's, byte for byte where it holds no path.
    for f in ("summary.csv", "runs/cubic_loss-1-_seed2/flows.csv"):
        assert (tmp_path / "py" / f).read_bytes() == (tmp_path / "cli" / f).read_bytes(), f
    assert cmp.report == str(tmp_path / "py" / "report.html")
    df = cmp.metrics.to_pandas()
    assert set(df["algorithm"]) == {"cubic", "bbr"}


def test_algorithms_are_the_clis() -> None:
    algs = kleinrock.algorithms()
    names = [a.name for a in algs]
    out = cli("algorithms").stdout
    listed = [line.split(":")[0].split(" ")[0] for line in out.splitlines() if line and not line.startswith(" ") and ":" in line and not line.startswith("A spec")]
    assert names == listed
    cubic = next(a for a in algs if a.name == "cubic")
    assert any(p[0] == "hystart" for p in cubic.params)


def test_replay_of_a_simulated_flows_trace(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    text = SHORT.replace('rtt = "20ms"\n[[ping]]', 'rtt = "20ms"\ntrace = "%s"\n[[ping]]' % trace)
    kleinrock.sim(text)
    r = kleinrock.replay(trace, "cubic", 250)
    assert r.agrees and bool(r) and r.rows > 100
    assert not kleinrock.replay(trace, "reno", 250).agrees
    done = cli("replay", str(trace), "--cc", "cubic", "--hz", "0")
    with pytest.raises(kleinrock.KleinrockError) as e:
        kleinrock.replay(trace, "cubic", 0)
    assert str(e.value) in done.stderr
    with pytest.raises(kleinrock.KleinrockError, match="unknown algorithm"):
        kleinrock.replay(trace, "cubik", 250)
