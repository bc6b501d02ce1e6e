//! SUBNET discovery (docs/network.md section 2a): the holder of a host's role announces the
//! host directory of its domain on the local network (one small multicast datagram per
//! interval, TTL 1), and every process of a host with SUBNET on listens for other hosts'
//! announcements. A host heard that way is then reached exactly as a static peer is: its
//! directory is asked every `poll_interval` and its members are linked. An announcement is
//! only ever a hint of where to ask: the query it leads to is an ordinary directory query, over
//! TLS, authenticated as every other exchange with SROS2 on.
//!
//! Its two loops run on the chores' thread (`chores.rs`, stage 3 of docs/network.md section
//! 4a), its sockets in the chores' poll (`chores::Udp`).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockRef, Socket, Type};
use tokio::sync::watch;

use super::announce::{self, Announcement};
use super::chores;
use super::ifaces;
use super::peer_host::{peer_loop, PeerHost};
use super::Inner;

/// The IPv4 group of the announcements (RFC 2365 local scope, as DDS's 239.255.0.1).
pub const ANNOUNCE_GROUP: Ipv4Addr = Ipv4Addr::new(239, 255, 76, 84);
/// The IPv6 group of the announcements: link-local scope (`ff02::`, never routed), its last
/// 32 bits the datagram's magic "LTHA".
pub const ANNOUNCE_GROUP_V6: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0x4c54, 0x4841);
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
    /// The IPv4 multicast group.
    pub group: Ipv4Addr,
    /// The IPv6 multicast group (used when the endpoints bind `[::]` or an IPv6 address).
    pub group6: Ipv6Addr,
    /// Steady announcement interval of the holder.
    pub interval: Duration,
}

impl SubnetConfig {
    /// The defaults for `domain_id`: port `25650 + d`, groups 239.255.76.84 and
    /// ff02::4c54:4841, every 3 s.
    pub fn for_domain(domain_id: u16) -> SubnetConfig {
        SubnetConfig {
            domain_id,
            port: ANNOUNCE_PORT_BASE.saturating_add(domain_id),
            group: ANNOUNCE_GROUP,
            group6: ANNOUNCE_GROUP_V6,
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

/// The sockets of one SUBNET role (announcing, listening): one per family it works on
/// (`ifaces::families`). A family whose socket could not be made (IPv6 disabled on the host,
/// say) is left out, and the other works alone.
pub(crate) struct Sockets {
    v4: Option<std::net::UdpSocket>,
    v6: Option<std::net::UdpSocket>,
}

/// The sockets for `bind` from `v4` and `v6` (each called only for a family `bind` covers),
/// and why each family that got none failed. `Err` when no family got one.
fn per_family(
    bind: IpAddr,
    v4: impl FnOnce() -> std::io::Result<Socket>,
    v6: impl FnOnce() -> std::io::Result<Socket>,
) -> Result<(Sockets, Vec<String>), String> {
    let (want4, want6) = ifaces::families(bind);
    let mut why = Vec::new();
    let mut made = |family: &str, r: Option<std::io::Result<Socket>>| match r? {
        Ok(s) => Some(s.into()),
        Err(e) => {
            why.push(format!("{family}: {e}"));
            None
        }
    };
    let v4 = made("IPv4", want4.then(v4));
    let v6 = made("IPv6", want6.then(v6));
    if v4.is_none() && v6.is_none() {
        return Err(why.join("; "));
    }
    Ok((Sockets { v4, v6 }, why))
}

/// The holder's announcement sockets. Made when the role is taken, before its loop is spawned,
/// so that the sockets a process holds do not depend on when the chores' thread gets to a task.
pub(crate) fn send_sockets(bind: IpAddr) -> Result<(Sockets, Vec<String>), String> {
    let v4 = || {
        let any = match bind {
            IpAddr::V4(a) => a,
            IpAddr::V6(_) => Ipv4Addr::UNSPECIFIED,
        };
        let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
        s.set_multicast_ttl_v4(1)?;
        // Other graphs of this machine (another user, another rendezvous directory) are hosts too.
        s.set_multicast_loop_v4(true)?;
        s.set_nonblocking(true)?;
        s.bind(&SocketAddr::from((any, 0)).into())?;
        Ok(s)
    };
    let v6 = || {
        let s = Socket::new(Domain::IPV6, Type::DGRAM, Some(Protocol::UDP))?;
        s.set_only_v6(true)?;
        s.set_multicast_hops_v6(1)?;
        s.set_multicast_loop_v6(true)?;
        s.set_nonblocking(true)?;
        s.bind(&SocketAddr::from((bind, 0)).into())?;
        Ok(s)
    };
    per_family(bind, v4, v6)
}

/// Every SUBNET process's sockets for the announcements (made at start, as `send_sockets`).
pub(crate) fn listen_sockets(
    bind: IpAddr,
    cfg: &SubnetConfig,
) -> Result<(Sockets, Vec<String>), String> {
    let v4 = || {
        let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
        // Every process of the host listens on the same port; each gets every announcement.
        s.set_reuse_address(true)?;
        // Only the group joined on this socket, and (bound to the group) no unicast to the port.
        s.set_multicast_all_v4(false)?;
        s.set_nonblocking(true)?;
        s.bind(&SocketAddr::V4(SocketAddrV4::new(cfg.group, cfg.port)).into())?;
        Ok(s)
    };
    let v6 = || {
        let s = Socket::new(Domain::IPV6, Type::DGRAM, Some(Protocol::UDP))?;
        s.set_only_v6(true)?;
        s.set_reuse_address(true)?;
        s.set_multicast_all_v6(false)?;
        s.set_nonblocking(true)?;
        // Not bound to the group: a link-scope group can be bound on one interface only. A
        // unicast datagram to the port can reach this socket; `heard` checks it as any other.
        s.bind(&SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, cfg.port, 0, 0)).into())?;
        Ok(s)
    };
    per_family(bind, v4, v6)
}

/// One of SUBNET's sockets.
type Sock = chores::Udp;

/// `sock` in the chores' poll (fails only if it cannot be registered); logged.
fn in_chores(inner: &Inner, sock: std::net::UdpSocket) -> Option<Sock> {
    chores::Udp::new(sock)
        .map_err(|e| inner.log(&format!("network: SUBNET: {e}; not announced nor heard")))
        .ok()
}

fn millis(d: Duration) -> u16 {
    let (lo, hi) = announce::INTERVAL_MS;
    u16::try_from(d.as_millis()).unwrap_or(hi).clamp(lo, hi)
}

/// The holder's announcements from `socks` (`send_sockets`), for as long as the transport runs
/// (the role is given up only at shutdown).
pub(crate) async fn announce_loop(inner: Arc<Inner>, socks: Sockets) {
    let Some(cfg) = inner.cfg.subnet.clone() else {
        return;
    };
    let v4 = socks.v4.and_then(|s| in_chores(&inner, s));
    let v6 = socks.v6.and_then(|s| in_chores(&inner, s));
    let mut failing: HashSet<String> = HashSet::new();
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
            authenticated: inner.identity.requires_certificates(),
        });
        let ifs = ifaces::interfaces(inner.cfg.bind);
        // Awaited, not `try_send_to`: a new socket is not known to be writable yet, and a
        // holder's first announcement is the one that matters most.
        let mut sent = Vec::new();
        if let Some(sock) = &v4 {
            let dest = SocketAddr::V4(SocketAddrV4::new(cfg.group, cfg.port));
            for i in &ifs.v4 {
                let r = match SockRef::from(sock.socket()).set_multicast_if_v4(&i.addr) {
                    Ok(()) => sock.send_to(&bytes, dest).await.map(|_| ()),
                    Err(e) => Err(e),
                };
                sent.push((i.addr.to_string(), r));
            }
        }
        if let Some(sock) = &v6 {
            for index in ifs.v6_indices() {
                let dest = SocketAddr::V6(SocketAddrV6::new(cfg.group6, cfg.port, 0, index));
                let r = match SockRef::from(sock.socket()).set_multicast_if_v6(index) {
                    Ok(()) => sock.send_to(&bytes, dest).await.map(|_| ()),
                    Err(e) => Err(e),
                };
                sent.push((format!("interface {index} (IPv6)"), r));
            }
        }
        for (on, r) in sent {
            match r {
                Ok(()) => {
                    failing.remove(&on);
                }
                Err(e) => {
                    if failing.insert(on.clone()) {
                        inner.log(&format!(
                            "network: SUBNET announcement on {on}: {e}; retrying quietly"
                        ));
                    }
                }
            }
        }
        tokio::select! {
            _ = chores::sleep(interval) => {}
            _ = stop.wait_for(|s| *s) => break,
        }
    }
}

/// A datagram from `sock`, or never when there is no socket (a family SUBNET does not use).
async fn recv(sock: &Option<Sock>, buf: &mut [u8]) -> std::io::Result<(usize, SocketAddr)> {
    match sock {
        Some(s) => s.recv_from(buf).await,
        None => std::future::pending().await,
    }
}

/// A group membership of a listening socket: an IPv4 interface by its address, an IPv6 one
/// by its index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Joined {
    V4(Ipv4Addr),
    V6(u32),
}

impl std::fmt::Display for Joined {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Joined::V4(a) => write!(f, "{a}"),
            Joined::V6(i) => write!(f, "interface {i} (IPv6)"),
        }
    }
}

/// Join the announcement groups on the interfaces of `ifs` not joined yet; forget the joins
/// of interfaces that are gone.
fn join(
    inner: &Inner,
    cfg: &SubnetConfig,
    (v4, v6): (&Option<Sock>, &Option<Sock>),
    ifs: &ifaces::Ifaces,
    joined: &mut HashSet<Joined>,
) {
    let mut want: Vec<Joined> = Vec::new();
    if v4.is_some() {
        want.extend(ifs.v4.iter().map(|i| Joined::V4(i.addr)));
    }
    if v6.is_some() {
        want.extend(ifs.v6_indices().into_iter().map(Joined::V6));
    }
    joined.retain(|j| want.contains(j));
    for j in want {
        if joined.contains(&j) {
            continue;
        }
        let r = match (j, v4, v6) {
            (Joined::V4(addr), Some(s), _) => {
                SockRef::from(s.socket()).join_multicast_v4(&cfg.group, &addr)
            }
            (Joined::V6(index), _, Some(s)) => {
                SockRef::from(s.socket()).join_multicast_v6(&cfg.group6, index)
            }
            _ => continue,
        };
        match r {
            Ok(()) => {
                joined.insert(j);
            }
            Err(e) if e.raw_os_error() == Some(nix::libc::EADDRINUSE) => {
                joined.insert(j);
            }
            Err(e) => inner.log_once(
                format!("join {j}"),
                &format!("network: SUBNET: cannot listen on {j}: {e}"),
            ),
        }
    }
}

/// Every SUBNET process: hear the other hosts' announcements on `socks` (`listen_sockets`) and
/// reach the hosts they name.
pub(crate) async fn listen_loop(inner: Arc<Inner>, socks: Sockets) {
    let Some(cfg) = inner.cfg.subnet.clone() else {
        return;
    };
    let v4 = socks.v4.and_then(|s| in_chores(&inner, s));
    let v6 = socks.v6.and_then(|s| in_chores(&inner, s));
    let mut stop = inner.stop.clone();
    let mut ifs = ifaces::Ifaces::default();
    let mut joined: HashSet<Joined> = HashSet::new();
    let mut rescan = Instant::now();
    // Every second, the first at once.
    let mut tick = Instant::now();
    // One more byte than an announcement, so a longer datagram is seen as longer.
    let mut buf4 = [0u8; announce::LEN + 1];
    let mut buf6 = [0u8; announce::LEN + 1];
    loop {
        if Instant::now() >= rescan {
            ifs = ifaces::interfaces(inner.cfg.bind);
            join(&inner, &cfg, (&v4, &v6), &ifs, &mut joined);
            rescan = Instant::now() + RESCAN;
        }
        tokio::select! {
            r = recv(&v4, &mut buf4) => {
                if let Ok((n, from)) = r {
                    heard(&inner, &cfg, &buf4[..n], from, &ifs);
                }
            }
            r = recv(&v6, &mut buf6) => {
                if let Ok((n, from)) = r {
                    heard(&inner, &cfg, &buf6[..n], from, &ifs);
                }
            }
            _ = chores::sleep_until(tick) => {
                expire(&inner);
                tick += Duration::from_secs(1);
            }
            _ = stop.wait_for(|s| *s) => break,
        }
    }
}

/// Where the directory of the host that announced from `from` is: its source address (with
/// the interface of a link-local one), at the announced port; `None` when the source is not
/// on one of our subnets.
fn directory_of(from: SocketAddr, port: u16, ifs: &ifaces::Ifaces) -> Option<SocketAddr> {
    match from {
        SocketAddr::V4(f) => ifaces::on_subnet4(*f.ip(), &ifs.v4)
            .then(|| SocketAddr::V4(SocketAddrV4::new(*f.ip(), port))),
        SocketAddr::V6(f) => ifaces::on_subnet6(*f.ip(), f.scope_id(), &ifs.v6)
            .then(|| SocketAddr::V6(SocketAddrV6::new(*f.ip(), port, 0, f.scope_id()))),
    }
}

/// One datagram heard on the announcement port.
fn heard(
    inner: &Arc<Inner>,
    cfg: &SubnetConfig,
    bytes: &[u8],
    from: SocketAddr,
    ifs: &ifaces::Ifaces,
) {
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
    let Some(addr) = directory_of(from, a.directory_port, ifs) else {
        inner.rejected.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let ip = from.ip();
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
    let now = Instant::now();
    let until = now + Duration::from_millis(u64::from(a.interval_ms)) * EXPIRY_INTERVALS;
    let mut found = inner.found.lock();
    if let Some(f) = found.get_mut(&a.host) {
        // A host heard on two of our subnets (or over both families) keeps the address it was
        // first heard at while that one is alive.
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
    super::chores::detach(peer_loop(
        inner.clone(),
        PeerHost::Announced(addr),
        None,
        Some(gone_rx),
        None,
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
    fn the_directory_is_at_the_source_with_its_interface() {
        let ifs = ifaces::Ifaces {
            v4: vec![ifaces::Iface4 {
                addr: Ipv4Addr::new(192, 0, 2, 1),
                mask: Ipv4Addr::new(255, 255, 255, 0),
            }],
            v6: vec![ifaces::Iface6 {
                index: 7,
                addr: "fd00:db8::1".parse().unwrap(),
                mask: "ffff:ffff:ffff:ffff::".parse().unwrap(),
            }],
        };
        let at = |s: &str| directory_of(s.parse().unwrap(), 24650, &ifs);
        assert_eq!(
            at("192.0.2.9:40000"),
            Some("192.0.2.9:24650".parse().unwrap())
        );
        assert_eq!(at("192.0.3.9:40000"), None);
        assert_eq!(
            at("[fd00:db8::2]:40000"),
            Some("[fd00:db8::2]:24650".parse().unwrap())
        );
        let ll = at("[fe80::2%7]:40000").unwrap();
        assert_eq!(ll, "[fe80::2%7]:24650".parse().unwrap());
        let SocketAddr::V6(ll) = ll else { panic!() };
        assert_eq!(ll.scope_id(), 7);
        assert_eq!(at("[fe80::2%8]:40000"), None);
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
