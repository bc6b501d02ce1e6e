//! The packed delivery policy of an edge, as SUBSCRIBE carries it (docs/wire.md): the link
//! layer routes by it, the graph delivers by it.

/// The packed 16-bit per-edge delivery policy. Bits (no magnitudes, by ruling):
///
/// ```text
/// bit 0      reliable (1) / best effort (0)
/// bits 1..=3 priority 0..7 (7 = most urgent)
/// bit 4      durability request: transient local (replay retained history first)
/// bit 5      exact: deliver writes at the source itself only, none made below it
/// bit 6      paced: flow control by a window of credit (a reliable data edge only)
/// bits 7..15 reserved, 0 (ignored when read, never set)
/// ```
///
/// A subtree edge (bit 5 clear) is the substrate's own subscription: every write at the source
/// or below it, each with its suffix. An exact edge is what a ROS subscription is: its topic and
/// nothing else, so `/camera/image` does not receive `/camera/image/compressed` (docs/wire.md,
/// SUBSCRIBE). A data-edge property: a structural (`:children[]`) edge ignores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeliveryPolicy(u16);

impl Default for DeliveryPolicy {
    /// Reliable, priority 0, volatile.
    fn default() -> Self {
        DeliveryPolicy::RELIABLE
    }
}

impl DeliveryPolicy {
    const RELIABLE_BIT: u16 = 1;
    const PRIO_SHIFT: u16 = 1;
    const PRIO_MASK: u16 = 0b111 << 1;
    const TRANSIENT_BIT: u16 = 1 << 4;
    const EXACT_BIT: u16 = 1 << 5;
    const PACED_BIT: u16 = 1 << 6;
    const KNOWN: u16 = 0b111_1111;

    /// The middle class: what a topic no one classed gets (the rmw's table), and what a WRITE
    /// travels in on a link of several streams, so that it stays behind the deliveries of that
    /// class written before it (wire.md section 5, ruling 3).
    pub const DEFAULT_CLASS: u8 = 3;

    pub const BEST_EFFORT: DeliveryPolicy = DeliveryPolicy(0);
    pub const RELIABLE: DeliveryPolicy = DeliveryPolicy(Self::RELIABLE_BIT);

    /// A subtree edge (the exact bit clear); see [`with_exact`](Self::with_exact).
    pub const fn new(reliable: bool, priority: u8, transient_local: bool) -> DeliveryPolicy {
        let mut b = 0;
        if reliable {
            b |= Self::RELIABLE_BIT;
        }
        b |= ((priority as u16) & 7) << Self::PRIO_SHIFT;
        if transient_local {
            b |= Self::TRANSIENT_BIT;
        }
        DeliveryPolicy(b)
    }
    /// From wire bits; reserved bits are dropped so a newer peer's extensions cannot confuse us.
    pub const fn from_bits(bits: u16) -> DeliveryPolicy {
        DeliveryPolicy(bits & Self::KNOWN)
    }
    pub const fn bits(self) -> u16 {
        self.0
    }
    pub const fn is_reliable(self) -> bool {
        self.0 & Self::RELIABLE_BIT != 0
    }
    pub const fn priority(self) -> u8 {
        ((self.0 & Self::PRIO_MASK) >> Self::PRIO_SHIFT) as u8
    }
    pub const fn is_transient_local(self) -> bool {
        self.0 & Self::TRANSIENT_BIT != 0
    }
    /// True for an exact edge: only writes at the source itself, never a suffix.
    pub const fn is_exact(self) -> bool {
        self.0 & Self::EXACT_BIT != 0
    }
    /// True for a paced edge: the producer sends no more than the consumer's window of credit
    /// (`Window`) beyond what the consumer has taken, and its writer waits for room (wire.md
    /// section 2, "Flow control"). Only on a reliable data edge.
    pub const fn is_paced(self) -> bool {
        self.0 & Self::PACED_BIT != 0 && self.is_reliable()
    }
    const fn with_bit(self, bit: u16, on: bool) -> DeliveryPolicy {
        DeliveryPolicy(if on { self.0 | bit } else { self.0 & !bit })
    }
    pub const fn with_reliable(self, on: bool) -> DeliveryPolicy {
        self.with_bit(Self::RELIABLE_BIT, on)
    }
    /// Priorities above 7 are clamped to 7.
    pub const fn with_priority(self, p: u8) -> DeliveryPolicy {
        let p = if p > 7 { 7 } else { p };
        DeliveryPolicy((self.0 & !Self::PRIO_MASK) | ((p as u16) << Self::PRIO_SHIFT))
    }
    pub const fn with_transient_local(self, on: bool) -> DeliveryPolicy {
        self.with_bit(Self::TRANSIENT_BIT, on)
    }
    /// Exact (only writes at the source) or subtree (the source and everything below it).
    pub const fn with_exact(self, on: bool) -> DeliveryPolicy {
        self.with_bit(Self::EXACT_BIT, on)
    }
    /// Paced (flow-controlled by a window of credit) or not; see [`is_paced`](Self::is_paced).
    pub const fn with_paced(self, on: bool) -> DeliveryPolicy {
        self.with_bit(Self::PACED_BIT, on)
    }
}

/// A paced edge's credit: how many samples and payload bytes its consumer holds for it beyond
/// what has been taken (SUBSCRIBE's WINDOW), or how much comes back at once (CREDIT).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Window {
    pub messages: u32,
    pub bytes: u64,
}
