//! The interfaces SUBNET announces on and listens on (docs/network.md section 2a), and whether
//! an announcement's source is on one of their subnets. IPv4 interfaces are named by an address
//! (`IP_MULTICAST_IF`, `IP_ADD_MEMBERSHIP` take one); IPv6 ones by an index (their options take
//! one, and a link-local source carries it as its scope id).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use nix::net::if_::InterfaceFlags;

/// An IPv4 interface address of this host that SUBNET covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Iface4 {
    pub addr: Ipv4Addr,
    pub mask: Ipv4Addr,
}

/// An IPv6 interface address of this host that SUBNET covers, with its interface's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Iface6 {
    pub index: u32,
    pub addr: Ipv6Addr,
    pub mask: Ipv6Addr,
}

/// What SUBNET covers for one bind address of the endpoints.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ifaces {
    pub v4: Vec<Iface4>,
    pub v6: Vec<Iface6>,
}

impl Ifaces {
    /// The IPv6 interface indices, each once.
    pub fn v6_indices(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.v6.iter().map(|i| i.index).collect();
        v.dedup();
        v
    }
}

/// The families SUBNET works on for the endpoints' `bind`: IPv4 for an IPv4 address, both for
/// the dual-stack `[::]`, IPv6 for one IPv6 address.
pub(crate) fn families(bind: IpAddr) -> (bool, bool) {
    match bind {
        IpAddr::V4(_) => (true, false),
        IpAddr::V6(a) if a.is_unspecified() => (true, true),
        IpAddr::V6(_) => (false, true),
    }
}

/// The interfaces announced on and listened on: up; when the endpoints bind every address,
/// each non-loopback multicast interface of the families `bind` covers; when they bind one
/// address, that address's interface only (loopback included: tests).
pub(crate) fn interfaces(bind: IpAddr) -> Ifaces {
    let (want4, want6) = families(bind);
    let every = match bind {
        IpAddr::V4(a) => a.is_unspecified(),
        IpAddr::V6(a) => a.is_unspecified(),
    };
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
        return Ifaces::default();
    };
    let mut out = Ifaces::default();
    for a in addrs {
        if !a.flags.contains(InterfaceFlags::IFF_UP) {
            continue;
        }
        let broad = !a.flags.contains(InterfaceFlags::IFF_LOOPBACK)
            && a.flags.contains(InterfaceFlags::IFF_MULTICAST);
        let v4 = |s: &Option<nix::sys::socket::SockaddrStorage>| {
            s.as_ref().and_then(|s| s.as_sockaddr_in()).map(|s| s.ip())
        };
        let v6 = |s: &Option<nix::sys::socket::SockaddrStorage>| {
            s.as_ref().and_then(|s| s.as_sockaddr_in6()).map(|s| s.ip())
        };
        if let (true, Some(addr), Some(mask)) = (want4, v4(&a.address), v4(&a.netmask)) {
            if (every && broad) || IpAddr::V4(addr) == bind {
                out.v4.push(Iface4 { addr, mask });
            }
        } else if let (true, Some(addr), Some(mask)) = (want6, v6(&a.address), v6(&a.netmask)) {
            let index = nix::net::if_::if_nametoindex(a.interface_name.as_str()).unwrap_or(0);
            if index != 0 && ((every && broad) || IpAddr::V6(addr) == bind) {
                out.v6.push(Iface6 { index, addr, mask });
            }
        }
    }
    out.v4.sort();
    out.v4.dedup();
    out.v6.sort();
    out.v6.dedup();
    out
}

/// Whether `ip` is on the subnet of one of `ifs` (an announcement from beyond a router, or a
/// forged source address from elsewhere, is not a host of our subnet).
pub(crate) fn on_subnet4(ip: Ipv4Addr, ifs: &[Iface4]) -> bool {
    ifs.iter().any(|i| {
        let m = u32::from(i.mask);
        u32::from(ip) & m == u32::from(i.addr) & m
    })
}

/// The IPv6 rule: a link-local source (`fe80::/10`, what a host sends link-scope multicast
/// from) counts when it came in on one of our interfaces (its scope id); any other source when
/// it is on the prefix of one of our addresses.
pub(crate) fn on_subnet6(ip: Ipv6Addr, scope: u32, ifs: &[Iface6]) -> bool {
    if ip.segments()[0] & 0xffc0 == 0xfe80 {
        return ifs.iter().any(|i| i.index == scope);
    }
    ifs.iter().any(|i| {
        let m = u128::from(i.mask);
        u128::from(ip) & m == u128::from(i.addr) & m
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_subnets() {
        let ifs = [Iface4 {
            addr: Ipv4Addr::new(192, 0, 2, 1),
            mask: Ipv4Addr::new(255, 255, 255, 0),
        }];
        assert!(on_subnet4(Ipv4Addr::new(192, 0, 2, 200), &ifs));
        assert!(!on_subnet4(Ipv4Addr::new(192, 0, 3, 2), &ifs));
        assert!(!on_subnet4(Ipv4Addr::new(10, 0, 0, 1), &[]));
    }

    #[test]
    fn ipv6_subnets_and_link_local_sources() {
        let ifs = [Iface6 {
            index: 3,
            addr: "fd00:db8::1".parse().unwrap(),
            mask: "ffff:ffff:ffff:ffff::".parse().unwrap(),
        }];
        assert!(on_subnet6("fd00:db8::2".parse().unwrap(), 0, &ifs));
        assert!(!on_subnet6("fd00:db9::2".parse().unwrap(), 0, &ifs));
        assert!(on_subnet6("fe80::1".parse().unwrap(), 3, &ifs));
        assert!(!on_subnet6("fe80::1".parse().unwrap(), 4, &ifs));
        assert!(!on_subnet6("fe80::1".parse().unwrap(), 3, &[]));
    }

    #[test]
    fn families_follow_the_bind_address() {
        assert_eq!(families("0.0.0.0".parse().unwrap()), (true, false));
        assert_eq!(families("192.0.2.1".parse().unwrap()), (true, false));
        assert_eq!(families("::".parse().unwrap()), (true, true));
        assert_eq!(families("fd00:db8::1".parse().unwrap()), (false, true));
    }

    #[test]
    fn loopback_is_covered_when_bound() {
        let ifs = interfaces(IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(ifs.v4.len(), 1);
        assert!(ifs.v6.is_empty());
    }
}
