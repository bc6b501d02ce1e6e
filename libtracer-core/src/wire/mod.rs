//! Wire protocol v1: frame types (`frame`) and their codec (`codec`). Pure: no sockets here.

pub mod frame;

pub use frame::*;
