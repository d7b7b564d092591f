//! Real quinn connections over loopback with Kleinrock's algorithms.
//!
//! A server sends a file of a few megabytes on a unidirectional stream to
//! a client, both quinn endpoints on 127.0.0.1 (tokio, rustls on ring, a
//! self-signed certificate from rcgen, as quinn's own tests set them up).
//! The server's controller is the adapter, with a tap that logs every hook
//! call; its socket drops one full-size datagram it sends, so the
//! algorithm meets at least one loss. Loopback may drop more (a full
//! receive buffer): every assertion holds for every reduction, so the
//! test asserts the same things however many there were, and nothing
//! about wall-clock time.
//!
//! What each algorithm must have seen:
//! - slow start ends: ssthresh turns finite (HyStart, or the loss), and
//!   later ACKs find cwnd at or above it (congestion avoidance); for BBR,
//!   STARTUP ends (its mode moves on);
//! - a loss reduces the window by the algorithm's own arithmetic: CUBIC's
//!   ssthresh is cwnd × 717 / 1024 and the window lands there at once;
//!   CDG's halves cwnd or its shadow window, whichever is larger, and its
//!   delay-gradient backoff takes it to 0.7 (backoff_beta) of cwnd; BBR's
//!   first ACK in Recovery sets cwnd to what is in flight plus what that
//!   ACK delivered (packet conservation, `bbr_set_cwnd_to_recover_or_restore()`);
//!   reno and Vegas halve cwnd, H-TCP multiplies it by its adaptive beta.

use std::fmt;
use std::io::{self, IoSliceMut};
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use kleinrock_cc::cdg::CDG_BACKOFF;
use kleinrock_cc::ops::Tap;
use kleinrock_cc::registry::Declared;
use kleinrock_cc::sock::TCP_INFINITE_SSTHRESH;
use kleinrock_cc::{Algorithm, CaState, CongestionControl, Hook, Sock};
use kleinrock_quinn::KleinrockConfig;
use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, Endpoint, EndpointConfig, Runtime, TokioRuntime, UdpPoller};

/// The file: a few megabytes, enough for slow start to end and for the
/// dropped datagram to be far from the tail.
const FILE_BYTES: usize = 4 << 20;

/// The server's full-size datagram to drop (counting from 0).
const DROP_AT: u64 = 300;

/// One hook call as the tap saw it.
#[derive(Clone, Debug)]
struct Call {
    hook: Hook,
    before: Sock,
    after: Sock,
    ret: u32,
    /// The algorithm's private members before and after, by name.
    members_before: Vec<(&'static str, i64)>,
    members_after: Vec<(&'static str, i64)>,
}

impl Call {
    fn member_before(&self, name: &str) -> i64 {
        member(&self.members_before, name)
    }
    fn member_after(&self, name: &str) -> i64 {
        member(&self.members_after, name)
    }
}

fn member(members: &[(&'static str, i64)], name: &str) -> i64 {
    members
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, v)| v)
        .unwrap_or_else(|| panic!("no member {name}"))
}

fn members(cc: &Algorithm) -> Vec<(&'static str, i64)> {
    let mut v = Vec::new();
    cc.visit_ca(&mut |n, x| v.push((n, x)));
    v
}

/// Logs every hook call into a log the test holds too.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<Call>>>);

impl Tap<Algorithm> for Log {
    fn call(&mut self, hook: &Hook, cc: &mut Algorithm, sk: &mut Sock) -> u32 {
        let before = sk.clone();
        let members_before = members(cc);
        let ret = hook.call(cc, sk);
        self.0.lock().unwrap().push(Call {
            hook: *hook,
            before,
            after: sk.clone(),
            ret,
            members_before,
            members_after: members(cc),
        });
        ret
    }
}

/// A UDP socket that drops the `DROP_AT`th full-size datagram it sends,
/// one datagram per send so that exactly one is lost.
struct Lossy {
    inner: Arc<dyn AsyncUdpSocket>,
    full_size_sent: AtomicU64,
}

impl fmt::Debug for Lossy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Lossy")
    }
}

impl AsyncUdpSocket for Lossy {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        self.inner.clone().create_io_poller()
    }

    fn try_send(&self, transmit: &Transmit) -> io::Result<()> {
        if transmit.contents.len() >= 1200 {
            let n = self.full_size_sent.fetch_add(1, Ordering::Relaxed);
            if n == DROP_AT {
                return Ok(());
            }
        }
        self.inner.try_send(transmit)
    }

    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        self.inner.poll_recv(cx, bufs, meta)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    fn max_transmit_segments(&self) -> usize {
        1
    }

    fn max_receive_segments(&self) -> usize {
        self.inner.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

/// Flow control must not limit the transfer: a flow-control-limited
/// sender is application-limited, and BBR ignores its samples.
fn transport() -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    t.stream_receive_window((16u32 << 20).into());
    t.receive_window((32u32 << 20).into());
    t.send_window(32 << 20);
    t
}

/// Sends the file from a server running `spec` to a client; returns every
/// hook call of the server's controller.
async fn transfer(spec: &str) -> Vec<Call> {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let cert_der = cert.cert.der().clone();
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der());

    let log = Log::default();
    let factory = KleinrockConfig::new(spec).unwrap().with_tap(log.clone());
    let mut server_transport = transport();
    server_transport.congestion_controller_factory(Arc::new(factory));
    let mut server_config =
        quinn::ServerConfig::with_single_cert(vec![cert_der.clone()], key.into()).unwrap();
    server_config.transport_config(Arc::new(server_transport));

    let runtime = Arc::new(TokioRuntime);
    let udp = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let socket = Arc::new(Lossy {
        inner: runtime.wrap_udp_socket(udp).unwrap(),
        full_size_sent: AtomicU64::new(0),
    });
    let server = Endpoint::new_with_abstract_socket(
        EndpointConfig::default(),
        Some(server_config),
        socket,
        runtime,
    )
    .unwrap();
    let server_addr = server.local_addr().unwrap();

    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert_der).unwrap();
    let mut client_config = quinn::ClientConfig::with_root_certificates(Arc::new(roots)).unwrap();
    client_config.transport_config(Arc::new(transport()));
    let mut client = Endpoint::client((Ipv4Addr::LOCALHOST, 0).into()).unwrap();
    client.set_default_client_config(client_config);

    let sending = tokio::spawn(async move {
        let conn = server.accept().await.unwrap().await.unwrap();
        let mut send = conn.open_uni().await.unwrap();
        send.write_all(&vec![0x5a; FILE_BYTES]).await.unwrap();
        send.finish().unwrap();
        conn.closed().await;
        server.wait_idle().await;
    });
    let conn = client
        .connect(server_addr, "localhost")
        .unwrap()
        .await
        .unwrap();
    let mut recv = conn.accept_uni().await.unwrap();
    let file = recv.read_to_end(FILE_BYTES + 1).await.unwrap();
    assert_eq!(file.len(), FILE_BYTES);
    assert!(file.iter().all(|&b| b == 0x5a));
    conn.close(0u32.into(), b"done");
    sending.await.unwrap();
    client.wait_idle().await;

    let calls = log.0.lock().unwrap().clone();
    assert!(matches!(calls.first(), Some(c) if c.hook == Hook::Init));
    calls
}

/// The reductions a loss started: the `ssthresh` call each
/// `set_state(Recovery)` from Open or Disorder follows, and the first call
/// after it (whose `before` shows the window the reduction left). A loss
/// inside a reduction already under way starts none, as in Linux.
fn loss_reductions(calls: &[Call]) -> Vec<(&Call, &Call)> {
    let mut found = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        if c.hook == Hook::SetState(CaState::Recovery) && c.before.icsk_ca_state < CaState::Cwr {
            let asked = calls[..i]
                .iter()
                .rev()
                .find(|c| c.hook == Hook::Ssthresh)
                .expect("Recovery entered without asking for ssthresh");
            if let Some(next) = calls.get(i + 1) {
                found.push((asked, next));
            }
        }
    }
    found
}

/// Slow start ended: ssthresh became finite, and some later ACK found
/// cwnd at or above it.
fn assert_slow_start_ends(calls: &[Call]) {
    let exit = calls
        .iter()
        .position(|c| c.after.snd_ssthresh < TCP_INFINITE_SSTHRESH)
        .expect("ssthresh never became finite");
    assert!(
        calls[exit..]
            .iter()
            .any(|c| matches!(c.hook, Hook::CongAvoid { .. })
                && c.before.snd_cwnd >= c.before.snd_ssthresh),
        "no ACK after slow start found cwnd at ssthresh"
    );
}

/// The window a reduction left, as the next hook call found it: ssthresh,
/// unless quinn's MTU discovery moved the MTU in between (a larger MTU
/// rescales cwnd to the same bytes; the unit tests check that).
fn assert_lands_on(next: &Call, reduced: &Call, expect: u32, what: &str) {
    if next.before.mss_cache == reduced.after.mss_cache {
        assert_eq!(next.before.snd_cwnd, expect, "{what}");
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn cubic_leaves_slow_start_and_a_loss_cuts_cwnd_by_beta() {
    for spec in ["cubic", "cubic:hystart=hspp"] {
        let calls = runtime().block_on(transfer(spec));
        assert_slow_start_ends(&calls);
        let reductions = loss_reductions(&calls);
        assert!(
            !reductions.is_empty(),
            "{spec}: the dropped datagram started no Recovery"
        );
        for (asked, next) in reductions {
            let cwnd = asked.before.snd_cwnd;
            // bictcp_recalc_ssthresh(): cwnd × beta / BICTCP_BETA_SCALE,
            // beta 717 of 1024, at least 2.
            let expect = (cwnd * 717 / 1024).max(2);
            assert_eq!(asked.ret, expect, "{spec}: ssthresh after cwnd {cwnd}");
            assert_lands_on(
                next,
                asked,
                expect,
                &format!("{spec}: the window lands on ssthresh"),
            );
        }
    }
}

#[test]
fn cdg_leaves_slow_start_and_a_loss_halves_cwnd_or_its_shadow() {
    let calls = runtime().block_on(transfer("cdg"));
    assert_slow_start_ends(&calls);
    let alg: Algorithm = "cdg".parse().unwrap();
    let Algorithm::Cdg(cdg) = &alg else {
        unreachable!("cdg parses into Cdg")
    };
    let params = cdg.params();
    let mut reductions = 0;
    for (asked, next) in loss_reductions(&calls) {
        let cwnd = asked.before.snd_cwnd;
        // tcp_cdg_ssthresh(): a loss in a backoff keeps the backoff's
        // factor; otherwise half of cwnd, or the halved shadow window if
        // that is larger.
        let expect = if asked.member_before("state") == CDG_BACKOFF as i64 {
            ((cwnd * params.backoff_beta.min(1024)) >> 10).max(2)
        } else {
            let shadow = ((asked.member_before("shadow_wnd") as u32) >> 1).min(cwnd);
            assert_eq!(asked.member_after("shadow_wnd"), shadow as i64);
            if params.use_shadow {
                shadow.max(cwnd >> 1).max(2)
            } else {
                (cwnd >> 1).max(2)
            }
        };
        assert_eq!(asked.ret, expect, "loss: ssthresh after cwnd {cwnd}");
        assert_lands_on(next, asked, expect, "loss: the window lands on ssthresh");
        reductions += 1;
    }
    // CDG's own backoff (a rising delay gradient, drawn at random) enters
    // CWR from cong_avoid at backoff_beta of cwnd; a loss during it
    // belongs to it. Either way the window came down by CDG's arithmetic.
    for (i, c) in calls.iter().enumerate() {
        let entered_cwr = matches!(c.hook, Hook::CongAvoid { .. })
            && c.before.icsk_ca_state < CaState::Cwr
            && c.after.icsk_ca_state == CaState::Cwr;
        if !entered_cwr {
            continue;
        }
        let cwnd = c.before.snd_cwnd;
        let expect = ((cwnd * params.backoff_beta.min(1024)) >> 10).max(2);
        assert_eq!(
            c.after.snd_ssthresh, expect,
            "backoff: ssthresh after cwnd {cwnd}"
        );
        if let Some(next) = calls.get(i + 1) {
            assert_lands_on(next, c, expect, "backoff: the window lands on ssthresh");
        }
        reductions += 1;
    }
    assert!(reductions > 0, "the dropped datagram reduced nothing");
}

#[test]
fn bbr_leaves_startup_and_conserves_packets_in_recovery() {
    let calls = runtime().block_on(transfer("bbr"));
    const STARTUP: i64 = 0;
    assert!(
        calls.iter().any(|c| c.member_after("mode") != STARTUP),
        "BBR never left STARTUP"
    );
    assert!(
        !loss_reductions(&calls).is_empty(),
        "the dropped datagram started no Recovery"
    );
    let mut checked = 0;
    for (i, c) in calls.iter().enumerate() {
        let Hook::CongControl { rs, .. } = c.hook else {
            continue;
        };
        // The first ACK in Recovery: packet conservation starts.
        if c.before.icsk_ca_state != CaState::Recovery || c.member_before("prev_ca_state") >= 3 {
            continue;
        }
        let conserved = c.before.packets_in_flight() + rs.acked_sacked;
        let expect = if c.member_after("mode") == 3 {
            conserved.min(4)
        } else {
            conserved
        };
        assert_eq!(c.after.snd_cwnd, expect, "call {i}");
        checked += 1;
    }
    assert!(checked > 0, "no ACK arrived in Recovery");
}

#[test]
fn reno_vegas_and_htcp_carry_the_file_and_cut_by_their_own_beta() {
    for spec in ["reno", "vegas", "htcp"] {
        let calls = runtime().block_on(transfer(spec));
        let reductions = loss_reductions(&calls);
        assert!(
            !reductions.is_empty(),
            "{spec}: the dropped datagram started no Recovery"
        );
        for (asked, next) in reductions {
            let cwnd = asked.before.snd_cwnd;
            let expect = if spec == "htcp" {
                // htcp_recalc_ssthresh(): cwnd × beta / 128, beta as
                // htcp_param_update() leaves it in the same call.
                ((cwnd * asked.member_after("beta") as u32) >> 7).max(2)
            } else {
                // tcp_reno_ssthresh(), which Vegas uses too: half.
                (cwnd >> 1).max(2)
            };
            assert_eq!(asked.ret, expect, "{spec}: ssthresh after cwnd {cwnd}");
            assert_lands_on(
                next,
                asked,
                expect,
                &format!("{spec}: the window lands on ssthresh"),
            );
        }
    }
}
