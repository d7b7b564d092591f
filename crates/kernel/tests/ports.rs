//! The ports beyond reno and cubic, in the running kernel: each is loaded
//! (a default instance and one with other parameters, side by side),
//! checked registered, carries 50 MB over loopback with both ends running
//! it, runs iperf3 in a namespace whose default it is, and unloads, after
//! which its struct_ops maps are freed. Losses and CE marks are traced,
//! and every ssthresh call the kernel made must return what the kernel's
//! own arithmetic gives for the window it was called at. Needs root,
//! iperf3 and the tools named in common::missing_tools, as tests/load.rs
//! does; otherwise it says why and skips, or fails where that is required
//! (kleinrock_testkit).
//!
//! Instances are named `krt_*` so that the tests neither trip over nor
//! unload what an operator has loaded.

mod common;

use std::collections::BTreeSet;
use std::net::TcpStream;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{
    available, bottleneck_loopback, congestion_of, connect_with, drop_to_port, in_new_netns,
    iperf3, iperf3_with, json_says, limit_send_buffer, listen_with, mark_ce_to_port, missing_tools,
    optmem, route_loopback_through, send, skip_reason, struct_ops_ids, switch_congestion, tcp_info,
    wait_freed, TCPI_OPT_ECN, TCPI_OPT_ECN_SEEN,
};
use kleinrock_cc::{Algorithm, Declared};
use kleinrock_kernel::pins::{Paths, Unloaded};
use kleinrock_kernel::plan::plan;
use kleinrock_kernel::trace::{run, Report, Request};
use kleinrock_testkit::{require, Missing};
use kleinrock_trace::TraceReader;

const TRANSFER: usize = 50 << 20;

/// Loads `(spec, name)` pairs of one port whose struct_ops map is `map`;
/// checks each is registered, listed with its spec, and a map of its own.
/// Returns the new maps' ids.
fn load_all(map: &str, instances: &[(&str, &str)]) -> Vec<u64> {
    for (_, name) in instances {
        let _ = Paths::system().unload(name, Duration::from_secs(2));
    }
    let before: BTreeSet<u64> = struct_ops_ids(map).into_iter().collect();
    for (spec, name) in instances {
        let p = plan(spec, Some(name)).unwrap();
        let loaded = kleinrock_kernel::load(&p).unwrap_or_else(|e| panic!("{e}"));
        assert!(loaded.link.exists(), "{name}");
    }
    let listed = available();
    let pinned = Paths::system().list().unwrap();
    for (spec, name) in instances {
        assert!(listed.iter().any(|n| n == name), "{name} in {listed:?}");
        let pin = pinned.iter().find(|p| p.name == *name).unwrap();
        let canonical = plan(spec, Some(name)).map(|p| p.spec).unwrap();
        assert_eq!(pin.spec.as_deref(), Some(canonical.as_str()));
        assert!(pin.registered && pin.linked, "{name}");
    }
    let ids: Vec<u64> = struct_ops_ids(map)
        .into_iter()
        .filter(|id| !before.contains(id))
        .collect();
    assert_eq!(
        ids.len(),
        instances.len(),
        "one struct_ops map per instance"
    );
    ids
}

/// Unloads every instance, checks the names left the kernel's list and,
/// once no socket holds them, that the maps `ids` are freed.
fn unload_all(map: &str, instances: &[(&str, &str)], ids: &[u64]) {
    for (_, name) in instances {
        let gone = Paths::system()
            .unload(name, Duration::from_secs(2))
            .unwrap();
        assert_eq!(gone, Unloaded::Gone, "{name}");
    }
    let listed = available();
    for (_, name) in instances {
        assert!(!listed.iter().any(|n| n == name), "{name} in {listed:?}");
    }
    assert_eq!(wait_freed(map, ids), Vec::<u64>::new(), "maps still loaded");
}

/// 50 MB over loopback with both ends running `ca`; returns the sender and
/// the receiver, still open.
fn both_ends(ca: &str) -> (std::net::TcpStream, std::net::TcpStream) {
    let listener = listen_with(ca);
    let mut tx = connect_with(ca, &listener);
    let (rx, _) = listener.accept().unwrap();
    let (got, rx) = send(&mut tx, rx, TRANSFER);
    assert_eq!(got, TRANSFER, "{ca}");
    assert_eq!(congestion_of(&tx), ca);
    assert_eq!(congestion_of(&rx), ca);
    (tx, rx)
}

/// What every test here needs: a kernel that loads ports, the tools that
/// build its paths, and iperf3.
fn missing() -> Option<Missing> {
    skip_reason().or_else(missing_tools).or_else(iperf3)
}

/// A scratch directory for `test`'s traces.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kleinrock-ports-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `f` while a trace session records every connection of the loaded
/// instance `name` into `out`; returns what `f` returned and the session's
/// report. The session's command is a `cat` of a FIFO: opening the FIFO
/// for writing waits until `cat` has it open, by when trace mode is on,
/// and closing it ends the session.
fn traced<T: Send>(name: &str, out: &Path, f: impl FnOnce() -> T + Send) -> (T, Report) {
    let fifo = out.with_extension("fifo");
    let _ = std::fs::remove_file(&fifo);
    let c_fifo = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: c_fifo is a NUL-terminated path.
    let rc = unsafe { libc::mkfifo(c_fifo.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo: {}", std::io::Error::last_os_error());
    let command = ["cat".to_string(), fifo.to_str().unwrap().to_string()];
    std::thread::scope(|s| {
        let session = s.spawn(|| {
            let request = Request {
                cc: name,
                out,
                command: Some(&command),
            };
            run(&request, &mut |_, _| {})
        });
        let writer = loop {
            let opened = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&fifo);
            match opened {
                Ok(w) => break w,
                // No reader yet.
                Err(e) if e.raw_os_error() == Some(libc::ENXIO) && !session.is_finished() => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => panic!(
                    "trace {name}: the session ended before its command ({e}): {:?}",
                    session.join().unwrap()
                ),
            }
        };
        let result = f();
        drop(writer);
        let report = session
            .join()
            .unwrap()
            .unwrap_or_else(|e| panic!("trace {name}: {e}"));
        (result, report)
    })
}

/// One ssthresh call of a trace: the window it was called at, the
/// threshold it returned, and the private members the kernel's arithmetic
/// reads, before and after the call.
struct SsthreshCall {
    row: u64,
    cwnd: i128,
    ssthresh: i128,
    ret: i128,
    ca: Vec<(String, Option<i128>, Option<i128>)>,
}

impl SsthreshCall {
    fn pre(&self, member: &str) -> i128 {
        self.member(member)
            .1
            .unwrap_or_else(|| panic!("pre_ca_{member}"))
    }

    fn post(&self, member: &str) -> i128 {
        self.member(member)
            .2
            .unwrap_or_else(|| panic!("post_ca_{member}"))
    }

    fn member(&self, name: &str) -> &(String, Option<i128>, Option<i128>) {
        self.ca.iter().find(|(n, _, _)| n == name).unwrap()
    }
}

/// The ssthresh calls of the trace at `path`.
fn ssthresh_calls(path: &Path, members: &[&str]) -> Vec<SsthreshCall> {
    let mut t = TraceReader::open(path).unwrap();
    let col = |t: &TraceReader, name: &str| t.column(name).unwrap_or_else(|| panic!("{name}"));
    let [hook, cwnd, ssthresh, ret] =
        ["hook", "pre_snd_cwnd", "pre_snd_ssthresh", "ret"].map(|c| col(&t, c));
    let ca: Vec<(String, usize, usize)> = members
        .iter()
        .map(|m| {
            let pre = col(&t, &format!("pre_ca_{m}"));
            (m.to_string(), pre, col(&t, &format!("post_ca_{m}")))
        })
        .collect();
    let mut calls = Vec::new();
    while let Some(row) = t.next_row().unwrap() {
        if t.text(hook) != "ssthresh" {
            continue;
        }
        let c = t.cells();
        calls.push(SsthreshCall {
            row: row.index,
            cwnd: c[cwnd].unwrap(),
            ssthresh: c[ssthresh].unwrap(),
            ret: c[ret].unwrap(),
            ca: ca
                .iter()
                .map(|(n, pre, post)| (n.clone(), c[*pre], c[*post]))
                .collect(),
        });
    }
    calls
}

/// What `ssthresh` of the instance `spec` returns for `call`, worked out
/// here as the kernel's source computes it (net/ipv4/tcp_*.c), not by the
/// Rust reference; checks the private members it writes on the way.
fn kernel_ssthresh(spec: &str, call: &SsthreshCall) -> i128 {
    let cwnd = call.cwnd;
    match spec.parse::<Algorithm>().unwrap() {
        // tcp_vegas.c: tcp_reno_ssthresh(), max(cwnd >> 1, 2).
        Algorithm::Vegas(_) => (cwnd >> 1).max(2),
        // tcp_htcp.c: htcp_recalc_ssthresh(), max((cwnd * beta) >> 7, 2),
        // with beta just updated by htcp_param_update(). Loopback's
        // minRTT is under 10 ms, so htcp_beta_update() always picks
        // BETA_MIN, 0.5 << 7.
        Algorithm::Htcp(_) => {
            let beta = call.post("beta");
            assert_eq!(beta, 64, "row {}: beta on loopback is BETA_MIN", call.row);
            ((cwnd * beta) >> 7).max(2)
        }
        // tcp_dctcp.c: dctcp_ssthresh(), max(cwnd - ((cwnd * alpha) >> 11), 2),
        // remembering cwnd in loss_cwnd.
        Algorithm::Dctcp(_) => {
            assert_eq!(call.post("loss_cwnd"), cwnd, "row {}: loss_cwnd", call.row);
            (cwnd - ((cwnd * call.pre("dctcp_alpha")) >> 11)).max(2)
        }
        // tcp_cdg.c: tcp_cdg_ssthresh(). Inside the port's own CWR (a loss
        // during a backoff, which in the kernel would not call ssthresh)
        // the port keeps the backoff's threshold (docs/KERNEL.md).
        Algorithm::Cdg(cdg) => {
            let p = cdg.params();
            if call.pre("in_cwr") == 1 {
                return call.ssthresh;
            }
            if call.pre("state") == i128::from(kleinrock_cc::cdg::CDG_BACKOFF) {
                return ((cwnd * i128::from(p.backoff_beta.min(1024))) >> 10).max(2);
            }
            if call.pre("state") == i128::from(kleinrock_cc::cdg::CDG_NONFULL) && p.use_tolerance {
                return cwnd;
            }
            let shadow = (call.pre("shadow_wnd") >> 1).min(cwnd);
            assert_eq!(
                call.post("shadow_wnd"),
                shadow,
                "row {}: shadow_wnd",
                call.row
            );
            if p.use_shadow {
                shadow.max(cwnd >> 1).max(2)
            } else {
                (cwnd >> 1).max(2)
            }
        }
        a => panic!("no kernel arithmetic written here for {a:?}"),
    }
}

/// The private members [`kernel_ssthresh`] reads for `spec`.
fn ssthresh_members(spec: &str) -> &'static [&'static str] {
    match spec.parse::<Algorithm>().unwrap() {
        Algorithm::Htcp(_) => &["beta"],
        Algorithm::Dctcp(_) => &["dctcp_alpha", "loss_cwnd"],
        Algorithm::Cdg(_) => &["in_cwr", "state", "shadow_wnd"],
        _ => &[],
    }
}

/// Checks the trace session `report` of the instance `spec`: it ran
/// cleanly, the sender's connection (source port `sport`) replays into the
/// Rust reference with zero divergence, and each of its ssthresh calls
/// returned what the kernel's arithmetic gives. Returns how many there
/// were.
fn exact_ssthresh(spec: &str, report: &Report, sport: u16) -> usize {
    assert_eq!(report.lost, 0, "{spec}: trace records lost");
    assert_eq!(report.summary.undecodable, 0, "{:?}", report.summary);
    let sender = report
        .summary
        .files
        .iter()
        .find(|f| f.conn.sport == sport)
        .unwrap_or_else(|| panic!("{spec}: the sender was not traced: {:?}", report.summary));
    let reference: Algorithm = report.replay_spec.parse().unwrap();
    let replayed = kleinrock_trace::replay(&sender.path, reference, report.hz, &mut |_| {})
        .unwrap_or_else(|e| panic!("{spec}: {e}"));
    assert!(replayed.agrees(), "{spec}: {replayed}");
    let calls = ssthresh_calls(&sender.path, ssthresh_members(spec));
    eprintln!(
        "{spec}: {} rows replayed, {} ssthresh calls checked",
        replayed.rows,
        calls.len()
    );
    for call in &calls {
        assert_eq!(
            call.ret,
            kernel_ssthresh(spec, call),
            "{spec}: row {}, ssthresh at cwnd {}",
            call.row,
            call.cwnd
        );
    }
    calls.len()
}

/// 20 MB through the instance `name` of `spec` at both ends in a fresh
/// namespace where 5% of the data segments are dropped: the transfer
/// completes through loss recovery, and every threshold the algorithm set
/// is the kernel's arithmetic on the window it was set at.
fn through_losses(spec: &str, name: &str) {
    let dir = scratch(name);
    let owned = name.to_string();
    let ((got, info, now, sport), report) = traced(name, &dir.join("loss.csv"), || {
        in_new_netns(&[], move || {
            let listener = listen_with(&owned);
            // Loopback carries GSO segments of up to 64 KB, so 20 MB is only a
            // few hundred packets to iptables: 5% makes a loss-free run
            // (e^-16) as unlikely as it must be for the assertion below.
            drop_to_port(listener.local_addr().unwrap().port(), 5);
            let mut tx = connect_with(&owned, &listener);
            let (rx, _) = listener.accept().unwrap();
            let (got, _) = send(&mut tx, rx, 20 << 20);
            let sport = tx.local_addr().unwrap().port();
            (got, tcp_info(&tx), congestion_of(&tx), sport)
        })
    });
    assert_eq!(got, 20 << 20, "{name}");
    assert_eq!(now, name);
    assert!(info.tcpi_total_retrans > 0, "{name}: nothing was lost");
    let calls = exact_ssthresh(spec, &report, sport);
    assert!(
        calls > 0,
        "{name}: {} retransmissions, no ssthresh call",
        info.tcpi_total_retrans
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The sender's TCP_INFO once every retransmission it made has been
/// reported back as a duplicate, or after a second: a spurious
/// retransmission's D-SACK can still be on its way when the data is read
/// (see [`nothing_lost`]).
fn settled_tcp_info(tx: &TcpStream) -> libc::tcp_info {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let info = tcp_info(tx);
        if info.tcpi_dsack_dups >= info.tcpi_total_retrans || Instant::now() > deadline {
            return info;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// iperf3 -C `ca` in a fresh namespace whose loopback route names `ca`
/// (`congctl`), so that the server's sockets run it too (a DCTCP sender's
/// ECT SYN is granted ECN only by a listener, or a route, whose algorithm
/// needs ECN).
fn iperf3_both_ends(ca: &str) {
    let name = ca.to_string();
    let json = in_new_netns(&[], move || {
        route_loopback_through(&name);
        iperf3_with(&name)
    });
    assert!(
        json_says(&json, "sender_tcp_congestion", ca),
        "iperf3's sender did not run {ca}: {json}"
    );
    assert!(
        json_says(&json, "receiver_tcp_congestion", ca),
        "iperf3's receiver did not run {ca}: {json}"
    );
}

#[test]
fn dctcp_negotiates_ecn_reacts_to_ce_marks_and_falls_back_to_reno_without_it() {
    require!(missing());
    const MAP: &str = "kr_dctcp";
    let instances = [
        ("dctcp", "krt_dctcp"),
        ("dctcp:shift_g=2:alpha_on_init=0", "krt_dctcp_var"),
    ];
    let ids = load_all(MAP, &instances);

    for (_, name) in instances {
        let (tx, rx) = both_ends(name);
        // ECN negotiated at both ends, and the data arrived ECT (the
        // receiver's ECN_SEEN counts data segments only).
        let (t, r) = (tcp_info(&tx).tcpi_options, tcp_info(&rx).tcpi_options);
        assert_eq!(t & TCPI_OPT_ECN, TCPI_OPT_ECN, "{name} sender: no ECN");
        assert_eq!(r & TCPI_OPT_ECN, TCPI_OPT_ECN, "{name} receiver: no ECN");
        assert_eq!(
            r & TCPI_OPT_ECN_SEEN,
            TCPI_OPT_ECN_SEEN,
            "{name}: no ECT data"
        );
    }

    // CE marks on 5% of the data and no loss: the receiver echoes them
    // (the sender counts CE deliveries) and the sender reduces for them,
    // each time by alpha/2 of the window it was at.
    let dir = scratch("dctcp");
    let ((info, sport), report) = traced("krt_dctcp", &dir.join("ce.csv"), || {
        in_new_netns(&[], || {
            let listener = listen_with("krt_dctcp");
            mark_ce_to_port(listener.local_addr().unwrap().port(), 5);
            let mut tx = connect_with("krt_dctcp", &listener);
            let (rx, _) = listener.accept().unwrap();
            let (got, _rx) = send(&mut tx, rx, 20 << 20);
            assert_eq!(got, 20 << 20);
            (settled_tcp_info(&tx), tx.local_addr().unwrap().port())
        })
    });
    assert!(info.tcpi_delivered_ce > 0, "no CE echoed");
    nothing_lost(&info, "krt_dctcp");
    let cuts = exact_ssthresh("dctcp", &report, sport);
    assert!(
        cuts > 0 && info.tcpi_snd_ssthresh < 0x7fff_ffff,
        "no reduction for {} CE-marked segments",
        info.tcpi_delivered_ce
    );
    std::fs::remove_dir_all(&dir).ok();

    // Without ECN (tcp_ecn=0, and a peer whose algorithm does not need it)
    // init hands the socket to the kernel's reno, at either end.
    in_new_netns(&[("net/ipv4/tcp_ecn", "0")], || {
        let listener = listen_with("cubic");
        let mut tx = connect_with("krt_dctcp", &listener);
        let (rx, _) = listener.accept().unwrap();
        let (got, rx) = send(&mut tx, rx, 4 << 20);
        assert_eq!(got, 4 << 20);
        assert_eq!(congestion_of(&tx), "reno", "the sender falls back");
        assert_eq!(congestion_of(&rx), "cubic");
        assert_eq!(tcp_info(&tx).tcpi_options & TCPI_OPT_ECN, 0);

        let listener = listen_with("krt_dctcp");
        let mut tx = connect_with("cubic", &listener);
        let (rx, _) = listener.accept().unwrap();
        let (got, rx) = send(&mut tx, rx, 4 << 20);
        assert_eq!(got, 4 << 20);
        assert_eq!(congestion_of(&rx), "reno", "the receiver falls back");
        assert_eq!(tcp_info(&rx).tcpi_options & TCPI_OPT_ECN, 0);
    });

    iperf3_both_ends("krt_dctcp");
    unload_all(MAP, &instances, &ids);
}

#[test]
fn htcp_carries_traffic_with_and_without_its_switches() {
    require!(missing());
    const MAP: &str = "kr_htcp";
    let instances = [
        ("htcp", "krt_htcp"),
        (
            "htcp:use_rtt_scaling=0:use_bandwidth_switch=0",
            "krt_htcp_var",
        ),
    ];
    let ids = load_all(MAP, &instances);
    for (spec, name) in instances {
        both_ends(name);
        through_losses(spec, name);
    }
    iperf3_both_ends("krt_htcp");
    unload_all(MAP, &instances, &ids);
}

#[test]
fn vegas_carries_traffic_with_its_default_and_other_thresholds() {
    require!(missing());
    const MAP: &str = "kr_vegas";
    let instances = [
        ("vegas", "krt_vegas"),
        ("vegas:alpha=4:beta=8:gamma=2", "krt_vegas_var"),
    ];
    let ids = load_all(MAP, &instances);
    for (spec, name) in instances {
        both_ends(name);
        through_losses(spec, name);
    }
    iperf3_both_ends("krt_vegas");
    unload_all(MAP, &instances, &ids);
}

/// 8 MB from `ca` through a 50 Mbit/s loopback bottleneck whose queue
/// never overflows; returns the sender's TCP_INFO. The send buffer keeps
/// the queue under about 80 ms, below the smallest RTO, so that no timer
/// fires spuriously either.
fn through_a_queue(ca: &str) -> libc::tcp_info {
    let name = ca.to_string();
    in_new_netns(&[], move || {
        bottleneck_loopback(50);
        let listener = listen_with(&name);
        let mut tx = connect_with(&name, &listener);
        limit_send_buffer(&tx, 256 << 10);
        let (rx, _) = listener.accept().unwrap();
        let (got, _rx) = send(&mut tx, rx, 8 << 20);
        assert_eq!(got, 8 << 20, "{name}");
        assert_eq!(congestion_of(&tx), name);
        settled_tcp_info(&tx)
    })
}

/// Nothing was lost on the way: every retransmission, if any, was
/// reported back as a duplicate (D-SACK). This loopback path sometimes
/// reorders (the sender's `tcpi_reordering` rises above 3, reno's too),
/// and RACK then retransmits a segment that was only late; and a host that
/// stalls a thread past the 10 ms floor of the loss probe's timer makes the
/// sender probe with a copy of what had arrived. Linux undoes the
/// reduction when the D-SACKs show that, restoring ssthresh, so what is
/// left of ssthresh is the algorithm's own doing.
fn nothing_lost(info: &libc::tcp_info, ca: &str) {
    assert_eq!(
        info.tcpi_total_retrans, info.tcpi_dsack_dups,
        "{ca}: a retransmission was not spurious, so the queue overflowed \
         (reordering {})",
        info.tcpi_reordering
    );
}

#[test]
fn cdg_keeps_its_window_in_socket_storage_and_backs_off_on_the_delay_gradient() {
    require!(missing());
    const MAP: &str = "kr_cdg";
    let instances = [
        ("cdg", "krt_cdg"),
        ("cdg:hystart_detect=0", "krt_cdg_nohs"),
        ("cdg:window=1:use_tolerance=1", "krt_cdg_w1"),
    ];
    let ids = load_all(MAP, &instances);
    for (spec, name) in instances {
        both_ends(name);
        through_losses(spec, name);
    }

    // The gradient window is socket-local storage, charged to the socket's
    // option memory: created by init, deleted by release (here, switching
    // the socket to cubic), and none at all with a window of one round.
    {
        let listener = listen_with("cubic");
        let tx = connect_with("krt_cdg", &listener);
        assert!(
            optmem(&tx) >= 256 * 8,
            "no gradient window: {}",
            optmem(&tx)
        );
        switch_congestion(&tx, "cubic");
        assert_eq!(optmem(&tx), 0, "release left the window behind");
        switch_congestion(&tx, "krt_cdg");
        assert!(optmem(&tx) >= 256 * 8, "init on an open connection");
        let tx = connect_with("krt_cdg_w1", &listener);
        assert_eq!(optmem(&tx), 0, "a window of one needs no storage");
    }

    // Through a growing queue, without HyStart and without a loss, only a
    // delay-gradient backoff sets ssthresh; the kernel's reno, in the same
    // place, never does.
    let reno = through_a_queue("reno");
    nothing_lost(&reno, "reno");
    assert_eq!(reno.tcpi_snd_ssthresh, 0x7fff_ffff, "reno without loss");
    let cdg = through_a_queue("krt_cdg_nohs");
    nothing_lost(&cdg, "krt_cdg_nohs");
    assert!(
        cdg.tcpi_snd_ssthresh < 0x7fff_ffff,
        "cdg never backed off: cwnd {}",
        cdg.tcpi_snd_cwnd
    );

    iperf3_both_ends("krt_cdg");
    unload_all(MAP, &instances, &ids);
}
