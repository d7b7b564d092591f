//! Workload files as a careless or hostile user writes them (issue 16):
//! each refused in one line naming the file, the line and the workload's
//! own key (not the key of the scenario it generates) with its limit.

use kleinrock_fleet::workload::Workload;
use kleinrock_testkit::wording::unclear;

const OK: &str = r#"connections = 20
duration = "2s"
gap = "1s"
[[path]]
name = "lan"
address = "10.0.0.1"
rtt = "1ms"
[path.link]
rate = "1Gbit"
"#;

/// `text` parsed as w.toml: the error, checked to be one clear line
/// (kleinrock_testkit::wording).
fn err(text: &str) -> String {
    let e = match Workload::parse(text, "w.toml", None) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.0,
    };
    if let Some(why) = unclear(&e, "") {
        panic!("{why}");
    }
    // The generated scenario's key, which a workload does not have (issue 16).
    assert!(!e.contains("sample_interval"), "{e}");
    e
}

#[test]
fn workload_mistakes_name_the_workloads_keys_and_limits() {
    let cases: Vec<(String, &str)> = vec![
        // The issue's example: 1 ns is not zero, and the key is `sample`.
        (
            format!("sample = \"1ns\"\n{OK}"),
            "w.toml line 1: `sample` = \"1ns\" is shorter than 1us, the limit (from 1us, as the series print time in microseconds, to a day)",
        ),
        (
            format!("sample = \"0s\"\n{OK}"),
            "w.toml line 1: `sample` = \"0s\" is shorter than 1us, the limit",
        ),
        (
            format!("sample = \"1us\"\n{}", OK.replace("\"2s\"", "\"600s\"")),
            "w.toml line 1: a connection's time series would hold 1800000003 records (a sample every 1us for 600s), more than 10000000, the limit",
        ),
        (
            OK.replace("\"2s\"", "\"1000000000000s\""),
            "w.toml line 2: `duration` = \"1000000000000s\" is longer than 86400s, the limit",
        ),
        (
            OK.replace("\"2s\"", "\"1ns\""),
            "w.toml line 2: `duration` = \"1ns\" is shorter than 1us, the limit (at least one sample interval",
        ),
        (OK.replace("gap = \"1s\"", "gap = \"0s\""), "w.toml line 3: `gap` must be longer than zero"),
        (OK.replace("\"1ms\"", "\"1e9s\""), "w.toml line 7: `rtt` = \"1e9s\" is longer than 120s, the limit"),
        (
            format!("sizes = [{{ size = \"1e30B\" }}]\n{OK}"),
            "w.toml line 1: `size` = \"1e30B\" is larger than 3109556320856B, the limit",
        ),
        (
            format!("sizes = [{{ size = \"1MB\", weight = 1e308 }}]\n{OK}"),
            "w.toml line 1: `weight` = 1e308 is not a positive number of at most 1e6",
        ),
        (
            format!("sizes = [{{ size = \"1MB\", weight = nan }}]\n{OK}"),
            "w.toml line 1: `weight` = nan is not a positive number of at most 1e6",
        ),
        (
            OK.replace("\"10.0.0.1\"", "\"10.0.0.1\\u001B[2J\""),
            "w.toml line 6: `address` = \"10.0.0.1\\u001B[2J\" is not an IP address",
        ),
        (OK.replace("connections = 20", "connections = \"20\""), "w.toml line 1: `connections` = \"20\" is a string; it must be a whole number"),
        (OK.replace("[[path]]", "[path]"), "w.toml line 4: [path] makes `path` a table, but it must be an array of tables, written [[path]]"),
        (OK.replace("rtt = \"1ms\"", "rtt = \"1ms\"\ncolour = 1"), "w.toml line 8: unknown key `colour` in [[path]]; valid keys are name, destinations,"),
        (OK.replace("rate = \"1Gbit\"", "rate = \"1Gbit\"\nqueue = 0"), "w.toml path `lan`: `queue` = 0 is smaller than one packet"),
        (
            format!("candidates = [\"{}\"]\n{OK}", "c".repeat(300)),
            "w.toml line 1: `candidates` = \"cccccccccccccccccccccccccccccccccccccccc... (300 characters)\" is not an algorithm spec",
        ),
        // Aborts on allocation: 10^11 connections in all, each limit
        // alone respected.
        (
            OK.replace("connections = 20", "connections = 100000")
                .replace("name = \"lan\"", "name = \"lan\"\ndestinations = 1000000"),
            "w.toml: the workload makes 100000000000 connections in all (`connections` = 100000 to each of 1000000 destinations), more than 10000000, the limit (the fleet holds every connection while it plays, about 200 bytes each); lower `connections` or `destinations`",
        ),
        // Summed over paths: 6 to each of 2 x 1,000,000, each path
        // alone within the limit.
        (
            format!(
                "{}[[path]]\nname = \"wan\"\ndestinations = 1000000\naddress = \"11.0.0.1\"\nrtt = \"9ms\"\n[path.link]\nrate = \"1Gbit\"\n",
                OK.replace("connections = 20", "connections = 6")
                    .replace("name = \"lan\"", "name = \"lan\"\ndestinations = 1000000")
            ),
            "w.toml: the workload makes 12000000 connections in all (`connections` = 6 to each of 2000000 destinations), more than 10000000, the limit",
        ),
        ("".into(), "w.toml: the workload is empty; it needs `connections`, `duration`, `gap` and at least one [[path]]"),
    ];
    for (text, want) in cases {
        let e = err(&text);
        assert!(e.starts_with(want), "\n got: {e}\nwant: {want}...");
    }
    // A sample finer than a microsecond but whole in ns reaches the
    // scenario exactly, rather than truncated to 0 us.
    let w = Workload::parse(&format!("sample = \"1500ns\"\n{OK}"), "w.toml", None).unwrap();
    assert_eq!(w.paths[0].before.config.sample_interval, 1500);
    // At the limit exactly: accepted.
    let w = Workload::parse(
        &OK.replace("connections = 20", "connections = 10")
            .replace("name = \"lan\"", "name = \"lan\"\ndestinations = 1000000"),
        "w.toml",
        None,
    )
    .unwrap();
    assert_eq!(
        w.paths[0].destinations as u64 * w.connections as u64,
        kleinrock_fleet::workload::MAX_CONNECTIONS
    );
}

#[test]
fn workload_files_that_are_not_workloads() {
    let dir = std::env::temp_dir().join(format!("kleinrock-hostile-w-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let latin1 = dir.join("w.toml");
    std::fs::write(&latin1, b"connections = 20\nname = \"caf\xe9\"\n").unwrap();
    let e = Workload::load(&latin1).unwrap_err().0;
    assert!(
        e.ends_with(
            "w.toml line 2: byte 12 of the line is not UTF-8 text; save the workload as UTF-8"
        ),
        "{e}"
    );
    let e = Workload::load(std::path::Path::new("/dev/zero"))
        .unwrap_err()
        .0;
    assert_eq!(e, "workload /dev/zero is not a regular file (it is a device, pipe or socket); give the path of a workload file");
    std::fs::remove_dir_all(&dir).unwrap();
}
