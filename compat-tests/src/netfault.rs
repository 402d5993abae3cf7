//! Network faults for the reliability suite: a TCP relay in front of the test server (with an
//! optional added latency, a slow link), and a network namespace joined to this host by a veth
//! pair whose packets can be dropped (a partition). Only the namespace's own link and
//! addresses (10.200.x.y/30) are touched; the guard removes them however the test ends.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Latency added to one direction of a relay: `base` plus a uniform jitter of up to
/// `± jitter`, never reordering bytes (like `tc netem delay BASE JITTER` on a link).
#[derive(Debug, Clone, Copy)]
pub struct Latency {
    /// Mean added delay.
    pub base: Duration,
    /// Spread around it.
    pub jitter: Duration,
}

/// A TCP relay from `listen` to `target`, one pair of threads per connection. Dropping it
/// stops accepting; open connections live until either end closes.
pub struct Relay {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Relay {
    /// Listens on `ip` (a free port) and relays to `target`; with `latency`, bytes from the
    /// client side are delayed by it before they go on.
    pub fn start(ip: IpAddr, target: SocketAddr, latency: Option<Latency>) -> Self {
        let listener = TcpListener::bind((ip, 0)).expect("relay binds");
        listener.set_nonblocking(true).expect("non-blocking accept");
        let addr = listener.local_addr().expect("relay address");
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stopped.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let _ = client.set_nonblocking(false);
                        if let Ok(server) = TcpStream::connect(target) {
                            relay(client, server, latency);
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Self { addr, stop }
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `url` (a test server's, on `127.0.0.1:PORT`) pointed at this relay instead, and the
    /// server's address; `None` when `url` is not on 127.0.0.1.
    pub fn target_of(url: &str) -> Option<SocketAddr> {
        let rest = &url[url.find("@127.0.0.1:")? + "@127.0.0.1:".len()..];
        let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
        Some(SocketAddr::from((Ipv4Addr::LOCALHOST, port.parse().ok()?)))
    }

    /// `url` with its `127.0.0.1:PORT` replaced by this relay's address.
    pub fn url_for(&self, url: &str, target: SocketAddr) -> String {
        url.replacen(&target.to_string(), &self.addr.to_string(), 1)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Pumps both directions of one connection.
fn relay(client: TcpStream, server: TcpStream, latency: Option<Latency>) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (Ok(client2), Ok(server2)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    std::thread::spawn(move || pump(client, server, latency));
    std::thread::spawn(move || pump(server2, client2, None));
}

/// Copies `from` to `to` until either closes; with `latency`, each chunk waits its delay in a
/// queue (release times never decrease, so bytes keep their order).
fn pump(mut from: TcpStream, mut to: TcpStream, latency: Option<Latency>) {
    let Some(latency) = latency else {
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Write);
        return;
    };
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    let mut out = to.try_clone().expect("clone");
    let writer = std::thread::spawn(move || {
        for (at, bytes) in rx {
            if let Some(wait) = at.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            if out.write_all(&bytes).is_err() {
                break;
            }
        }
        let _ = out.shutdown(Shutdown::Write);
    });
    let mut seed = u64::from(std::process::id()) ^ 0x9E37_79B9_7F4A_7C15;
    let mut last = Instant::now();
    let mut buf = vec![0; 64 * 1024];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        // xorshift: a jitter in [-1, 1) of the configured spread.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let unit = (seed % 2_000) as f64 / 1_000.0 - 1.0;
        let delay = latency.base.as_secs_f64() + unit * latency.jitter.as_secs_f64();
        let at = (Instant::now() + Duration::from_secs_f64(delay.max(0.0))).max(last);
        last = at;
        if tx.send((at, buf[..n].to_vec())).is_err() {
            break;
        }
    }
    drop(tx);
    let _ = writer.join();
    drop(to);
}

/// Namespaces made by this process so far (for unique names and subnets).
static MADE: AtomicU32 = AtomicU32::new(0);

/// A network namespace linked to this host by a veth pair: the host end has `host_ip`, the
/// namespace end `ns_ip` (one /30 under 10.200.0.0/16). Dropping it deletes the namespace
/// (which deletes the pair).
pub struct Netns {
    name: String,
    host_if: String,
    /// The host end's address (what processes inside connect to).
    pub host_ip: Ipv4Addr,
    /// The namespace end's address.
    pub ns_ip: Ipv4Addr,
}

/// Runs `program args`; its failure (or absence) as a sentence.
fn sh(program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{program} could not run: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{program} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Netns {
    /// Creates the namespace and its link; the error says what is missing (a tool, the
    /// privilege): the caller reports it as `NOT RUN`.
    pub fn create() -> Result<Self, String> {
        for (tool, package) in [("ip", "iproute2"), ("iptables", "iptables")] {
            if Command::new(tool)
                .arg("-V")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_err()
            {
                return Err(format!(
                    "`{tool}` is not installed (Debian package {package})"
                ));
            }
        }
        if !crate::servers::running_as_root() {
            return Err("network namespaces need root (CAP_NET_ADMIN)".into());
        }
        let n = MADE.fetch_add(1, Ordering::SeqCst);
        let pid = std::process::id();
        // 16,384 /30 subnets in 10.200.0.0/16; neighbours in time get neighbouring subnets.
        let slot = (pid.wrapping_mul(16).wrapping_add(n)) % 16_384;
        let (third, fourth) = ((slot / 64) as u8, ((slot % 64) * 4) as u8);
        let ns = Self {
            name: format!("docket-{pid}-{n}"),
            host_if: format!("dkh{}{n}", pid % 100_000),
            host_ip: Ipv4Addr::new(10, 200, third, fourth + 1),
            ns_ip: Ipv4Addr::new(10, 200, third, fourth + 2),
        };
        let ns_if = format!("dkn{}{n}", pid % 100_000);
        sh("ip", &["netns", "add", &ns.name])?;
        // From here on, Drop cleans up.
        let host = format!("{}/30", ns.host_ip);
        let inner = format!("{}/30", ns.ns_ip);
        sh(
            "ip",
            &[
                "link",
                "add",
                &ns.host_if,
                "type",
                "veth",
                "peer",
                "name",
                &ns_if,
            ],
        )?;
        sh("ip", &["link", "set", &ns_if, "netns", &ns.name])?;
        sh("ip", &["addr", "add", &host, "dev", &ns.host_if])?;
        sh("ip", &["link", "set", &ns.host_if, "up"])?;
        ns.exec(&["ip", "addr", "add", &inner, "dev", &ns_if])?;
        ns.exec(&["ip", "link", "set", &ns_if, "up"])?;
        ns.exec(&["ip", "link", "set", "lo", "up"])?;
        // The namespace's firewall must work before the test relies on it.
        ns.exec(&["iptables", "-L", "OUTPUT", "-n"])?;
        Ok(ns)
    }

    /// Runs a command inside the namespace.
    fn exec(&self, args: &[&str]) -> Result<(), String> {
        let mut all = vec!["netns", "exec", &self.name];
        all.extend_from_slice(args);
        sh("ip", &all)
    }

    /// The command prefix that runs a program inside the namespace.
    pub fn wrapper(&self) -> Vec<String> {
        ["ip", "netns", "exec", &self.name]
            .map(str::to_owned)
            .to_vec()
    }

    /// Drops every packet between the namespace and the host (inside the namespace, both
    /// directions): connections hang, nothing is refused.
    pub fn partition(&self) {
        let host = self.host_ip.to_string();
        self.exec(&["iptables", "-I", "OUTPUT", "-d", &host, "-j", "DROP"])
            .and_then(|()| self.exec(&["iptables", "-I", "INPUT", "-s", &host, "-j", "DROP"]))
            .expect("partition installed");
    }

    /// Lets packets through again.
    pub fn heal(&self) {
        self.exec(&["iptables", "-F", "OUTPUT"])
            .and_then(|()| self.exec(&["iptables", "-F", "INPUT"]))
            .expect("partition healed");
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = sh("ip", &["netns", "del", &self.name]);
        // Normally gone with the namespace's end of the pair.
        let _ = sh("ip", &["link", "del", &self.host_if]);
    }
}
