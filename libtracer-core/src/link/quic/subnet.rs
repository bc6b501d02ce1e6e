//! SUBNET discovery (docs/network.md section 2a): the holder of a host's role announces the
//! host directory of its domain on the local network (one small multicast datagram per
//! interval, TTL 1), and every process of a host with SUBNET on listens for other hosts'
//! announcements. A host heard that way is then reached exactly as a static peer is: its
//! directory is asked every `poll_interval` and its members are linked. An announcement is
//! only ever a hint of where to ask: the query it leads to is an ordinary directory query, over
//! TLS, authenticated as every other exchange with SROS2 on.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::net::if_::InterfaceFlags;
use socket2::{Domain, Protocol, SockRef, Socket, Type};
use tokio::net::UdpSocket;
use tokio::sync::watch;

use super::announce::{self, Announcement};
use super::directory::{peer_loop, PeerHost};
use super::Inner;

/// The IPv4 group of the announcements (RFC 2365 local scope, as DDS's 239.255.0.1).
pub const ANNOUNCE_GROUP: Ipv4Addr = Ipv4Addr::new(239, 255, 76, 84);
/// The first announcement port; domain `d` announces on `ANNOUNCE_PORT_BASE + d`.
pub const ANNOUNCE_PORT_BASE: u16 = 25650;
/// A new holder's first announcements come this often, this many times (a datagram lost at
/// start costs a second, not a full interval), then every `SubnetConfig::interval`.
const FAST: (Duration, u32) = (Duration::from_secs(1), 5);
/// A host not heard for this many of its announced intervals is forgotten.
const EXPIRY_INTERVALS: u32 = 4;
/// At most this many announced hosts are reached per domain; more are ignored (logged once).
pub const MAX_HOSTS: usize = 64;
/// How often the interfaces are listed again (new ones joined, gone ones dropped).
const RESCAN: Duration = Duration::from_secs(5);

/// SUBNET discovery for one domain.
#[derive(Clone, Debug)]
pub struct SubnetConfig {
    /// The domain id carried in the announcements (another domain's are ignored).
    pub domain_id: u16,
    /// The UDP port announcements are sent to and heard on.
    pub port: u16,
    /// The multicast group.
    pub group: Ipv4Addr,
    /// Steady announcement interval of the holder.
    pub interval: Duration,
}

impl SubnetConfig {
    /// The defaults for `domain_id`: port `25650 + d`, group 239.255.76.84, every 3 s.
    pub fn for_domain(domain_id: u16) -> SubnetConfig {
        SubnetConfig {
            domain_id,
            port: ANNOUNCE_PORT_BASE.saturating_add(domain_id),
            group: ANNOUNCE_GROUP,
            interval: Duration::from_secs(3),
        }
    }
}

/// An announced host being reached: where its directory is, until when it counts as heard,
/// and the switch that ends its directory poll.
pub(crate) struct Found {
    addr: SocketAddr,
    until: Instant,
    _gone: watch::Sender<bool>,
}

/// This host's id for the domain: `<dir>/net-host.id` (16 hex digits), made by the first
/// process that needs it, kept by every holder after it, so a takeover announces the same host.
pub(crate) fn host_id(dir: &Path) -> std::io::Result<u64> {
    let path = dir.join("net-host.id");
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|s| u64::from_str_radix(s.trim(), 16).ok())
            .filter(|id| *id != 0)
    };
    if let Some(id) = read(&path) {
        return Ok(id);
    }
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    let id = h.finish().max(1);
    let tmp = dir.join(format!(".net-host.id.{}", std::process::id()));
    std::fs::write(&tmp, format!("{id:016x}\n"))?;
    // link(2) fails if another process made the file first: then its id is the host's.
    let linked = std::fs::hard_link(&tmp, &path);
    let out = match linked {
        Ok(()) => Ok(id),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => match read(&path) {
            Some(theirs) => Ok(theirs),
            // A file that does not hold an id (truncated by a crash): ours replaces it.
            None => std::fs::rename(&tmp, &path).map(|()| id),
        },
        Err(e) => Err(e),
    };
    let _ = std::fs::remove_file(&tmp);
    out
}

/// An IPv4 interface address of this host that SUBNET covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Iface {
    addr: Ipv4Addr,
    mask: Ipv4Addr,
}

/// The IPv4 address SUBNET works on for the endpoints' `bind`: the same, or `0.0.0.0` for the
/// dual-stack `[::]`; none for one IPv6 address (announcements are IPv4 only).
fn ipv4_of(bind: IpAddr) -> Option<Ipv4Addr> {
    match bind {
        IpAddr::V4(a) => Some(a),
        IpAddr::V6(a) if a.is_unspecified() => Some(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => None,
    }
}

/// The interfaces announced on and listened on: up and IPv4; when the endpoints bind every
/// address, each non-loopback multicast interface; when they bind one address, its interface
/// only (loopback included: tests). IPv6 is not announced (not built).
fn interfaces(bind: IpAddr) -> Vec<Iface> {
    let Some(bind) = ipv4_of(bind) else {
        return Vec::new();
    };
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for a in addrs {
        let v4 = |s: &Option<nix::sys::socket::SockaddrStorage>| {
            s.as_ref().and_then(|s| s.as_sockaddr_in()).map(|s| s.ip())
        };
        let (Some(addr), Some(mask)) = (v4(&a.address), v4(&a.netmask)) else {
            continue;
        };
        if !a.flags.contains(InterfaceFlags::IFF_UP) {
            continue;
        }
        let wanted = if bind.is_unspecified() {
            !a.flags.contains(InterfaceFlags::IFF_LOOPBACK)
                && a.flags.contains(InterfaceFlags::IFF_MULTICAST)
        } else {
            addr == bind
        };
        if wanted {
            out.push(Iface { addr, mask });
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Whether `ip` is on the subnet of one of `ifs` (an announcement from beyond a router, or a
/// forged source address from elsewhere, is not a host of our subnet).
fn on_subnet(ip: Ipv4Addr, ifs: &[Iface]) -> bool {
    ifs.iter().any(|i| {
        let m = u32::from(i.mask);
        u32::from(ip) & m == u32::from(i.addr) & m
    })
}

/// The holder's announcement socket. Made when the role is taken, before its loop is spawned,
/// so that the sockets a process holds do not depend on when its runtime gets to a task.
pub(crate) fn send_socket(bind: IpAddr) -> std::io::Result<std::net::UdpSocket> {
    let bind = ipv4_of(bind).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            format!("announcements are IPv4 only and the endpoints bind {bind}"),
        )
    })?;
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    s.set_multicast_ttl_v4(1)?;
    // Other graphs of this machine (another user, another rendezvous directory) are hosts too.
    s.set_multicast_loop_v4(true)?;
    s.set_nonblocking(true)?;
    s.bind(&SocketAddr::from((bind, 0)).into())?;
    Ok(s.into())
}

/// Every SUBNET process's socket for the announcements (made at start, as `send_socket`).
pub(crate) fn listen_socket(cfg: &SubnetConfig) -> std::io::Result<std::net::UdpSocket> {
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    // Every process of the host listens on the same port; each gets every announcement.
    s.set_reuse_address(true)?;
    // Only the group joined on this socket, and (bound to the group) no unicast to the port.
    s.set_multicast_all_v4(false)?;
    s.set_nonblocking(true)?;
    s.bind(&SocketAddr::V4(SocketAddrV4::new(cfg.group, cfg.port)).into())?;
    Ok(s.into())
}

/// `sock` registered with the runtime the task runs on (fails only without one); logged.
fn on_runtime(inner: &Inner, sock: std::net::UdpSocket) -> Option<UdpSocket> {
    UdpSocket::from_std(sock)
        .map_err(|e| inner.log(&format!("network: SUBNET: {e}; not announced nor heard")))
        .ok()
}

fn millis(d: Duration) -> u16 {
    let (lo, hi) = announce::INTERVAL_MS;
    u16::try_from(d.as_millis()).unwrap_or(hi).clamp(lo, hi)
}

/// The holder's announcements from `sock` (`send_socket`), for as long as the transport runs
/// (the role is given up only at shutdown).
pub(crate) async fn announce_loop(inner: Arc<Inner>, sock: std::net::UdpSocket) {
    let Some(cfg) = inner.cfg.subnet.clone() else {
        return;
    };
    let Some(sock) = on_runtime(&inner, sock) else {
        return;
    };
    let dest = SocketAddr::V4(SocketAddrV4::new(cfg.group, cfg.port));
    let mut failing: HashSet<Ipv4Addr> = HashSet::new();
    let mut stop = inner.stop.clone();
    for n in 0u32.. {
        if inner.stopped() {
            break;
        }
        let interval = if n < FAST.1 { FAST.0 } else { cfg.interval };
        let bytes = announce::encode(&Announcement {
            domain: cfg.domain_id,
            directory_port: inner.cfg.directory_port,
            interval_ms: millis(interval),
            host: inner.host_id,
            authenticated: inner.identity.authenticated(),
        });
        for i in interfaces(inner.cfg.bind) {
            // Awaited, not `try_send_to`: a new socket is not known to be writable yet, and
            // a holder's first announcement is the one that matters most.
            let sent = match SockRef::from(&sock).set_multicast_if_v4(&i.addr) {
                Ok(()) => sock.send_to(&bytes, dest).await.map(|_| ()),
                Err(e) => Err(e),
            };
            match sent {
                Ok(()) => {
                    failing.remove(&i.addr);
                }
                Err(e) => {
                    if failing.insert(i.addr) {
                        inner.log(&format!(
                            "network: SUBNET announcement on {}: {e}; retrying quietly",
                            i.addr
                        ));
                    }
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = stop.wait_for(|s| *s) => break,
        }
    }
}

/// Every SUBNET process: hear the other hosts' announcements on `sock` (`listen_socket`) and
/// reach the hosts they name.
pub(crate) async fn listen_loop(inner: Arc<Inner>, sock: std::net::UdpSocket) {
    let Some(cfg) = inner.cfg.subnet.clone() else {
        return;
    };
    let Some(sock) = on_runtime(&inner, sock) else {
        return;
    };
    let mut stop = inner.stop.clone();
    let mut ifs: Vec<Iface> = Vec::new();
    let mut joined: HashSet<Ipv4Addr> = HashSet::new();
    let mut rescan = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    // One more byte than an announcement, so a longer datagram is seen as longer.
    let mut buf = [0u8; announce::LEN + 1];
    loop {
        if Instant::now() >= rescan {
            ifs = interfaces(inner.cfg.bind);
            joined.retain(|a| ifs.iter().any(|i| i.addr == *a));
            for i in &ifs {
                if joined.contains(&i.addr) {
                    continue;
                }
                match sock.join_multicast_v4(cfg.group, i.addr) {
                    Ok(()) => {
                        joined.insert(i.addr);
                    }
                    Err(e) if e.raw_os_error() == Some(nix::libc::EADDRINUSE) => {
                        joined.insert(i.addr);
                    }
                    Err(e) => inner.log_once(
                        format!("join {}", i.addr),
                        &format!("network: SUBNET: cannot listen on {}: {e}", i.addr),
                    ),
                }
            }
            rescan = Instant::now() + RESCAN;
        }
        tokio::select! {
            r = sock.recv_from(&mut buf) => {
                if let Ok((n, from)) = r {
                    heard(&inner, &cfg, &buf[..n], from, &ifs);
                }
            }
            _ = tick.tick() => expire(&inner),
            _ = stop.wait_for(|s| *s) => break,
        }
    }
}

/// One datagram heard on the announcement port.
fn heard(inner: &Arc<Inner>, cfg: &SubnetConfig, bytes: &[u8], from: SocketAddr, ifs: &[Iface]) {
    let a = match announce::decode(bytes) {
        Ok(a) => a,
        Err(_) => {
            inner.rejected.fetch_add(1, Ordering::Relaxed);
            return;
        }
    };
    if a.domain != cfg.domain_id || a.host == inner.host_id {
        return;
    }
    let IpAddr::V4(ip) = from.ip() else {
        return;
    };
    if !on_subnet(ip, ifs) {
        inner.rejected.fetch_add(1, Ordering::Relaxed);
        return;
    }
    if a.authenticated && !inner.identity.authenticated() {
        inner.log_once(
            format!("auth {ip}"),
            &format!(
                "network: the host at {ip} asks for SROS2 certificates (ROS_SECURITY_*); \
                 not reached without them"
            ),
        );
        return;
    }
    let addr = SocketAddr::new(IpAddr::V4(ip), a.directory_port);
    let now = Instant::now();
    let until = now + Duration::from_millis(u64::from(a.interval_ms)) * EXPIRY_INTERVALS;
    let mut found = inner.found.lock();
    if let Some(f) = found.get_mut(&a.host) {
        // A host heard on two of our subnets keeps the address it was first heard at while
        // that one is alive.
        if f.addr == addr {
            f.until = until;
        }
        if f.until > now {
            return;
        }
    }
    if !found.contains_key(&a.host) && found.len() >= MAX_HOSTS {
        drop(found);
        inner.log_once(
            "max hosts".into(),
            &format!("network: SUBNET: more than {MAX_HOSTS} hosts announce; {ip} ignored"),
        );
        return;
    }
    let (gone_tx, gone_rx) = watch::channel(false);
    // Replacing an entry drops its sender, which ends its poll.
    found.insert(
        a.host,
        Found {
            addr,
            until,
            _gone: gone_tx,
        },
    );
    drop(found);
    inner.rt.spawn(peer_loop(
        inner.clone(),
        PeerHost::Announced(addr),
        None,
        Some(gone_rx),
    ));
}

/// Forget the hosts not heard for four intervals (their polls end; live links stay until QUIC
/// finds them idle).
fn expire(inner: &Inner) {
    let now = Instant::now();
    inner.found.lock().retain(|_, f| f.until > now);
}

/// The directory addresses of the announced hosts being reached, sorted.
pub(crate) fn found_hosts(inner: &Inner) -> Vec<SocketAddr> {
    let mut v: Vec<SocketAddr> = inner.found.lock().values().map(|f| f.addr).collect();
    v.sort();
    v
}

/// Used by `Inner`: the map of announced hosts.
pub(crate) type FoundHosts = HashMap<u64, Found>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnets() {
        let ifs = [Iface {
            addr: Ipv4Addr::new(192, 0, 2, 1),
            mask: Ipv4Addr::new(255, 255, 255, 0),
        }];
        assert!(on_subnet(Ipv4Addr::new(192, 0, 2, 200), &ifs));
        assert!(!on_subnet(Ipv4Addr::new(192, 0, 3, 2), &ifs));
        assert!(!on_subnet(Ipv4Addr::new(10, 0, 0, 1), &[]));
    }

    #[test]
    fn the_host_id_is_made_once_and_kept() {
        let dir = std::env::temp_dir().join(format!("libtracer-hostid-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let a = host_id(&dir).unwrap();
        assert_ne!(a, 0);
        assert_eq!(host_id(&dir).unwrap(), a);
        std::fs::write(dir.join("net-host.id"), "garbage").unwrap();
        let b = host_id(&dir).unwrap();
        assert_ne!(b, 0);
        assert_eq!(host_id(&dir).unwrap(), b);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn intervals_fit_the_datagram() {
        assert_eq!(millis(Duration::from_secs(3)), 3000);
        assert_eq!(millis(Duration::from_millis(5)), 100);
        assert_eq!(millis(Duration::from_secs(3600)), 60_000);
    }
}
