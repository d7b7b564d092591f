//! The ports beyond reno and cubic, in the running kernel: each is loaded
//! (a default instance and one with other parameters, side by side),
//! checked registered, carries 50 MB over loopback with both ends running
//! it, runs iperf3 in a namespace whose default it is, and unloads, after
//! which its struct_ops maps are freed. Needs root, as tests/load.rs does;
//! otherwise it says why and skips.
//!
//! Instances are named `krt_*` so that the tests neither trip over nor
//! unload what an operator has loaded.

mod common;

use std::collections::BTreeSet;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{
    available, bottleneck_loopback, congestion_of, connect_with, drop_to_port, have_iperf3,
    in_new_netns, iperf3_with, json_says, limit_send_buffer, listen_with, mark_ce_to_port,
    missing_tools, optmem, route_loopback_through, send, skip_reason, struct_ops_ids,
    switch_congestion, tcp_info, wait_freed, TCPI_OPT_ECN, TCPI_OPT_ECN_SEEN,
};
use kleinrock_kernel::pins::{Paths, Unloaded};
use kleinrock_kernel::plan::plan;

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

/// 20 MB through `ca` at both ends in a fresh namespace where 5% of the
/// data segments are dropped: the transfer completes through loss recovery,
/// and the algorithm's ssthresh set a finite threshold.
fn through_losses(ca: &str) {
    let name = ca.to_string();
    let (got, info, now) = in_new_netns(&[], move || {
        let listener = listen_with(&name);
        // Loopback carries GSO segments of up to 64 KB, so 20 MB is only a
        // few hundred packets to iptables: 5% makes a loss-free run
        // (e^-16) as unlikely as it must be for the assertion below.
        drop_to_port(listener.local_addr().unwrap().port(), 5);
        let mut tx = connect_with(&name, &listener);
        let (rx, _) = listener.accept().unwrap();
        let (got, _) = send(&mut tx, rx, 20 << 20);
        (got, tcp_info(&tx), congestion_of(&tx))
    });
    assert_eq!(got, 20 << 20, "{ca}");
    assert_eq!(now, ca);
    assert!(info.tcpi_total_retrans > 0, "{ca}: nothing was lost");
    assert!(
        (2..0x7fff_ffff).contains(&info.tcpi_snd_ssthresh),
        "{ca}: ssthresh {}",
        info.tcpi_snd_ssthresh
    );
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
    if let Some(why) = skip_reason().or_else(missing_tools) {
        eprintln!("dctcp kernel test skipped: {why}");
        return;
    }
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
    // (the sender counts CE deliveries) and the sender reduces for them.
    let info = in_new_netns(&[], || {
        let listener = listen_with("krt_dctcp");
        mark_ce_to_port(listener.local_addr().unwrap().port(), 5);
        let mut tx = connect_with("krt_dctcp", &listener);
        let (rx, _) = listener.accept().unwrap();
        let (got, _rx) = send(&mut tx, rx, 20 << 20);
        assert_eq!(got, 20 << 20);
        settled_tcp_info(&tx)
    });
    assert!(info.tcpi_delivered_ce > 0, "no CE echoed");
    nothing_lost(&info, "krt_dctcp");
    assert!(
        info.tcpi_snd_ssthresh < 0x7fff_ffff,
        "no reduction for {} CE-marked segments",
        info.tcpi_delivered_ce
    );

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

    if have_iperf3("dctcp iperf3 run") {
        iperf3_both_ends("krt_dctcp");
    }
    unload_all(MAP, &instances, &ids);
}

#[test]
fn htcp_carries_traffic_with_and_without_its_switches() {
    if let Some(why) = skip_reason().or_else(missing_tools) {
        eprintln!("htcp kernel test skipped: {why}");
        return;
    }
    const MAP: &str = "kr_htcp";
    let instances = [
        ("htcp", "krt_htcp"),
        (
            "htcp:use_rtt_scaling=0:use_bandwidth_switch=0",
            "krt_htcp_var",
        ),
    ];
    let ids = load_all(MAP, &instances);
    for (_, name) in instances {
        both_ends(name);
        through_losses(name);
    }
    if have_iperf3("htcp iperf3 run") {
        iperf3_both_ends("krt_htcp");
    }
    unload_all(MAP, &instances, &ids);
}

#[test]
fn vegas_carries_traffic_with_its_default_and_other_thresholds() {
    if let Some(why) = skip_reason().or_else(missing_tools) {
        eprintln!("vegas kernel test skipped: {why}");
        return;
    }
    const MAP: &str = "kr_vegas";
    let instances = [
        ("vegas", "krt_vegas"),
        ("vegas:alpha=4:beta=8:gamma=2", "krt_vegas_var"),
    ];
    let ids = load_all(MAP, &instances);
    for (_, name) in instances {
        both_ends(name);
        through_losses(name);
    }
    if have_iperf3("vegas iperf3 run") {
        iperf3_both_ends("krt_vegas");
    }
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
    if let Some(why) = skip_reason().or_else(missing_tools) {
        eprintln!("cdg kernel test skipped: {why}");
        return;
    }
    const MAP: &str = "kr_cdg";
    let instances = [
        ("cdg", "krt_cdg"),
        ("cdg:hystart_detect=0", "krt_cdg_nohs"),
        ("cdg:window=1:use_tolerance=1", "krt_cdg_w1"),
    ];
    let ids = load_all(MAP, &instances);
    for (_, name) in instances {
        both_ends(name);
        through_losses(name);
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

    if have_iperf3("cdg iperf3 run") {
        iperf3_both_ends("krt_cdg");
    }
    unload_all(MAP, &instances, &ids);
}
