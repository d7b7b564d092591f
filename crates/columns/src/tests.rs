//! The tables' schemas, held to docs/PYTHON.md's "Schemas", and their
//! values to the results they come from.

use super::*;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt64Type};
use kleinrock_report::plan::PlannedRun;
use kleinrock_sim::Sim;

const SCENARIO: &str = "duration = \"2s\"\n[link]\nrate = \"10Mbit\"\nqueue = 20\nloss = \"1%\"\n\
    [[flow]]\ncc = \"cubic\"\nrtt = \"20ms\"\ncount = 2\n[[ping]]\nrtt = \"20ms\"\n";

fn results() -> (kleinrock_sim::Config, Results) {
    let config = kleinrock_sim::scenario::parse(SCENARIO, "t.toml", None).unwrap();
    let r = Sim::new(config.clone()).unwrap().run(&mut |_| {}).unwrap();
    (config, r)
}

/// `name:type` per column, `?` after a nullable one.
fn schema(b: &RecordBatch) -> String {
    b.schema()
        .fields()
        .iter()
        .map(|f| {
            let ty = match f.data_type() {
                DataType::Float64 => "f64",
                DataType::UInt64 => "u64",
                DataType::UInt32 => "u32",
                DataType::Utf8 => "str",
                other => panic!("{other} is not a type the tables use"),
            };
            format!(
                "{}:{ty}{}",
                f.name(),
                if f.is_nullable() { "?" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_schemas_are_the_documented_ones() {
    let (_, r) = results();
    // docs/PYTHON.md lists the same, column for column.
    let want = [
        ("flows", "t:f64 flow:u32 goodput_bps:f64 throughput_bps:f64 cwnd:u32 ssthresh:u32 srtt_us:u32 min_rtt_us:u32 inflight:u32 pacing_rate_bps:u64 delivery_rate_bps:f64 retransmits:u64 segs_out:u64 ca_state:str"),
        ("queues", "t:f64 link:str packets:u32 bytes:u64 delay_us:u64 drops:u64 marks:u64"),
        ("pings", "t:f64 ping:u32 rtt_ms:f64"),
        ("summary", "flow:u32 cc:str direction:str rtt_ms:f64 goodput_bps:f64 bytes:u64 segments_sent:u64 retransmits:u64 rtos:u64 tlps:u64 recoveries:u64 rtt_p50_ms:f64 rtt_p95_ms:f64 rtt_p99_ms:f64 responses:u64 response_p50_ms:f64 response_p95_ms:f64 completion_s:f64?"),
        ("ping_summary", "ping:u32 rtt_ms:f64 sent:u64 received:u64 rtt_p50_ms:f64 rtt_p95_ms:f64"),
        ("udp", "udp:u32 sent:u64 goodput_bps:f64 loss:f64"),
        ("links", "link:str tx_packets:u64 tx_bytes:u64 queue_drops:u64 loss_drops:u64 marks:u64"),
    ];
    assert_eq!(want.map(|w| w.0), RUN_TABLES);
    for (name, cols) in want {
        assert_eq!(schema(&run_table(&r, name).unwrap()), cols, "{name}");
    }
    assert!(run_table(&r, "nosuch").is_none());
}

#[test]
fn each_table_holds_its_results() {
    let (_, r) = results();
    assert_eq!(flows(&r).num_rows(), r.flow_series.len());
    assert_eq!(queues(&r).num_rows(), r.queue_series.len());
    assert_eq!(pings(&r).num_rows(), r.ping_series.len());
    assert_eq!(summary(&r).num_rows(), 2);
    assert_eq!(links(&r).num_rows(), 2);
    let f = flows(&r);
    let cwnd = f
        .column_by_name("cwnd")
        .unwrap()
        .as_primitive::<arrow_array::types::UInt32Type>();
    assert!(cwnd
        .values()
        .iter()
        .zip(&r.flow_series)
        .all(|(c, s)| *c == s.cwnd));
    let s = summary(&r);
    let g = s
        .column_by_name("goodput_bps")
        .unwrap()
        .as_primitive::<Float64Type>();
    assert_eq!(g.value(1), r.flows[1].goodput_bps);
    let l = links(&r);
    let drops = l
        .column_by_name("loss_drops")
        .unwrap()
        .as_primitive::<UInt64Type>();
    assert_eq!(drops.value(0), r.links[0].loss_drops);
    assert!(r.links[0].loss_drops > 0, "1% loss took packets");
}

#[test]
fn metrics_are_the_reports_with_the_swept_values_as_written() {
    let (config, r) = results();
    let run = Run::new(
        PlannedRun {
            spec: "cubic".into(),
            point: vec![("loss".into(), "1%".into()), ("hz".into(), "250".into())],
            seed: 7,
            config,
        },
        r,
    );
    let m = run.metrics();
    let b = metrics(&["loss".into(), "hz".into()], &[(41, &run)]);
    assert_eq!(
        schema(&b),
        "run_id:u64 algorithm:str loss:str hz:str seed:u64 goodput_bps:f64 rtt_p50_ms:f64 rtt_p95_ms:f64 queue_p95_ms:f64 retransmits:u64 jain:f64 completion_s:f64? power:f64 queue_drops:u64 loss_drops:u64 marks:u64 run:str"
    );
    let f = |c: &str| {
        b.column_by_name(c)
            .unwrap()
            .as_primitive::<Float64Type>()
            .value(0)
    };
    let u = |c: &str| {
        b.column_by_name(c)
            .unwrap()
            .as_primitive::<UInt64Type>()
            .value(0)
    };
    let s = |c: &str| {
        b.column_by_name(c)
            .unwrap()
            .as_string::<i32>()
            .value(0)
            .to_string()
    };
    assert_eq!((u("run_id"), u("seed")), (41, 7));
    assert_eq!(
        (s("loss"), s("hz"), s("run")),
        ("1%".into(), "250".into(), run.slug())
    );
    assert_eq!(f("goodput_bps"), m.goodput_bps);
    assert_eq!(f("rtt_p95_ms"), m.rtt_p95_ms);
    assert_eq!(f("power"), m.power());
    assert_eq!(u("retransmits"), m.retransmits);
    assert_eq!(u("loss_drops"), run.results.links[0].loss_drops);
    assert!(
        b.column_by_name("completion_s").unwrap().is_null(0),
        "bulk flows never complete"
    );
}

#[cfg(feature = "parquet")]
#[test]
fn parquet_files_read_back_as_the_tables() {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let (_, r) = results();
    let dir = std::env::temp_dir().join(format!("kleinrock-columns-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    crate::write_run(&dir, &r).unwrap();
    for name in RUN_TABLES {
        let want = run_table(&r, name).unwrap();
        let f = std::fs::File::open(dir.join(format!("{name}.parquet"))).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(f).unwrap();
        // An empty table (no UDP flows here) is a schema and no batch.
        let read_schema = reader.schema().clone();
        let batches: Vec<RecordBatch> = reader.build().unwrap().collect::<Result<_, _>>().unwrap();
        let got = arrow_select::concat::concat_batches(&read_schema, &batches).unwrap();
        assert_eq!(schema(&got), schema(&want), "{name}");
        assert_eq!(got.columns(), want.columns(), "{name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
