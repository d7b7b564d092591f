//! An algorithm's private state (the kernel's `inet_csk_ca()` area),
//! declared once.
//!
//! Traces name every member of the private struct (`pre_ca_<member>`,
//! `post_ca_<member>`), replay compares them and takes some back from a
//! trace, and the BPF ports lay out the same members for the kernel tracer
//! to name from BTF. `private_state!` writes the struct from one
//! declaration and derives the rest from it, so a member is named once:
//!
//! ```text
//! private_state! {
//!     /// `struct bbr`.
//!     pub struct BbrState {
//!         pub min_rtt_us: u32,                 // a member, traced as min_rtt_us
//!         pub lt_rtt_cnt: u32 : 7,             // a 7-bit field in the kernel
//!         pub bw: MinMax {                     // a struct the kernel flattens:
//!             bw_s0_t(.s[0].t), bw_s0_v(.s[0].v), ...   // trace name(place)
//!         },
//!         untraced gradients: Vec<i32>,        // kept, but no trace column
//!     }
//! }
//! ```
//!
//! The flattened names are those `crates/kernel/src/ca.rs` derives from a
//! port's BTF, so a kernel trace and a simulated one share their columns. A
//! prefix (`private_state! { prefix "hspp_"; ... }`) names the members of
//! a struct that other algorithms embed (HyStart++'s, as `hspp_phase`).
//! A bitfield's width is stated once: replay keeps that many low bits of a
//! trace's value, as a C assignment to the field would.

use crate::ops::CaVisitor;

/// A value a private member can hold: how a trace cell shows it, and how a
/// cell is taken back.
pub trait Member: Sized {
    /// The trace cell: unsigned members zero-extend, signed ones (CDG's
    /// `s32` RTTs) sign-extend, booleans are 0 or 1.
    fn to_cell(self) -> i64;
    /// A cell back into the member, truncated as a C assignment would.
    fn from_cell(cell: i64) -> Self;
}

macro_rules! integer_members {
    ($($t:ty),*) => {$(
        impl Member for $t {
            fn to_cell(self) -> i64 {
                self as i64
            }
            fn from_cell(cell: i64) -> Self {
                cell as $t
            }
        }
    )*};
}

integer_members!(u8, u16, u32, u64, usize, i32);

impl Member for bool {
    fn to_cell(self) -> i64 {
        self as i64
    }
    fn from_cell(cell: i64) -> Self {
        cell != 0
    }
}

/// What `private_state!` derives for a struct.
pub trait PrivateState {
    /// The members as traces name them, in the order of the kernel's
    /// struct.
    const MEMBERS: &'static [&'static str];

    /// Walks the members in [`PrivateState::MEMBERS`] order.
    fn visit(&self, visit: CaVisitor<'_>);

    /// Sets one member from a trace cell; false if there is no such member.
    fn set(&mut self, name: &str, cell: i64) -> bool;
}

/// Takes a trace cell into a member: its low `bits` bits for a bitfield
/// (`bits` is 0 for a whole member).
pub fn store<T: Member>(member: &mut T, cell: i64, bits: u32) {
    let cell = match bits {
        1..=63 => cell & ((1i64 << bits) - 1),
        _ => cell,
    };
    *member = T::from_cell(cell);
}

/// Declares a private-state struct and derives [`PrivateState`] for it (see
/// the module's documentation for the syntax). Every field ends with a
/// comma.
macro_rules! private_state {
    (@struct $prefix:literal $(#[$meta:meta])* $vis:vis struct $name:ident { $($body:tt)* }) => {
        $crate::state::private_state!(@field [$prefix $(#[$meta])* $vis struct $name] [] [] $($body)*);
    };
    // A field the traces do not show.
    (@field $head:tt [$($fields:tt)*] [$($members:tt)*]
        $(#[$a:meta])* untraced $f:ident : $t:ty, $($rest:tt)*) => {
        $crate::state::private_state!(@field $head
            [$($fields)* $(#[$a])* pub $f: $t,] [$($members)*] $($rest)*);
    };
    // A bitfield of the kernel's struct.
    (@field $head:tt [$($fields:tt)*] [$($members:tt)*]
        $(#[$a:meta])* $v:vis $f:ident : $t:ty : $bits:literal, $($rest:tt)*) => {
        $crate::state::private_state!(@field $head
            [$($fields)* $(#[$a])*
             #[doc = concat!("\n\nA ", stringify!($bits), "-bit field in the kernel.")]
             $v $f: $t,]
            [$($members)* ($f) (.$f) ($bits)] $($rest)*);
    };
    // A struct or array the kernel's layout flattens into named members.
    (@field $head:tt [$($fields:tt)*] [$($members:tt)*]
        $(#[$a:meta])* $v:vis $f:ident : $t:ty { $($m:ident ($($place:tt)*)),* $(,)? }, $($rest:tt)*) => {
        $crate::state::private_state!(@field $head
            [$($fields)* $(#[$a])* $v $f: $t,]
            [$($members)* $(($m) (.$f $($place)*) (0))*] $($rest)*);
    };
    // A whole member.
    (@field $head:tt [$($fields:tt)*] [$($members:tt)*]
        $(#[$a:meta])* $v:vis $f:ident : $t:ty, $($rest:tt)*) => {
        $crate::state::private_state!(@field $head
            [$($fields)* $(#[$a])* $v $f: $t,]
            [$($members)* ($f) (.$f) (0)] $($rest)*);
    };
    (@field [$prefix:literal $(#[$meta:meta])* $vis:vis struct $name:ident] [$($fields:tt)*]
        [$(($m:ident) ($($place:tt)*) ($bits:literal))*]) => {
        $(#[$meta])*
        $vis struct $name { $($fields)* }

        impl $crate::state::PrivateState for $name {
            const MEMBERS: &'static [&'static str] = &[$(concat!($prefix, stringify!($m))),*];

            fn visit(&self, visit: $crate::ops::CaVisitor<'_>) {
                $(visit(
                    concat!($prefix, stringify!($m)),
                    $crate::state::Member::to_cell(self $($place)*),
                );)*
            }

            fn set(&mut self, name: &str, cell: i64) -> bool {
                match name {
                    $(concat!($prefix, stringify!($m)) => {
                        $crate::state::store(&mut self $($place)*, cell, $bits)
                    })*
                    _ => return false,
                }
                true
            }
        }
    };
    // The entry points, after the internal rules they expand to.
    (prefix $prefix:literal; $($decl:tt)*) => {
        $crate::state::private_state!(@struct $prefix $($decl)*);
    };
    ($($decl:tt)*) => {
        $crate::state::private_state!(@struct "" $($decl)*);
    };
}

pub(crate) use private_state;

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Pair {
        pub a: u16,
        pub b: i32,
    }

    private_state! {
        /// A struct with one member of each kind.
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct Demo {
            pub whole: u32,
            pub narrow: u32 : 3,
            pub flag: bool,
            pub pair: Pair { pair_a(.a), pair_b(.b) },
            pub arr: [u8; 2] { arr_0([0]), arr_1([1]) },
            untraced hidden: Vec<u8>,
        }
    }

    private_state! {
        prefix "p_";
        #[derive(Default)]
        pub struct Prefixed {
            pub x: u8,
        }
    }

    fn cells<S: PrivateState>(s: &S) -> Vec<(&'static str, i64)> {
        let mut v = Vec::new();
        s.visit(&mut |n, x| v.push((n, x)));
        v
    }

    #[test]
    fn members_are_named_once_and_flattened_in_order() {
        assert_eq!(
            Demo::MEMBERS,
            ["whole", "narrow", "flag", "pair_a", "pair_b", "arr_0", "arr_1"]
        );
        assert_eq!(Prefixed::MEMBERS, ["p_x"]);
        let d = Demo {
            whole: u32::MAX,
            pair: Pair { a: 7, b: -3 },
            arr: [1, 2],
            ..Demo::default()
        };
        let c = cells(&d);
        assert_eq!(c[0], ("whole", 0xffff_ffff), "unsigned zero-extends");
        assert_eq!(c[4], ("pair_b", -3), "signed sign-extends");
        assert_eq!(&c[5..], &[("arr_0", 1), ("arr_1", 2)]);
    }

    #[test]
    fn set_truncates_as_c_and_keeps_a_bitfields_width() {
        let mut d = Demo::default();
        assert!(d.set("narrow", 0xff));
        assert_eq!(d.narrow, 7);
        assert!(d.set("whole", -1));
        assert_eq!(d.whole, u32::MAX);
        assert!(d.set("flag", 2));
        assert!(d.flag);
        assert!(d.set("pair_b", -5) && d.set("arr_1", 0x1ff));
        assert_eq!((d.pair.b, d.arr[1]), (-5, 0xff));
        assert!(!d.set("hidden", 1));
        assert!(!d.set("nope", 1));
        let mut p = Prefixed::default();
        assert!(p.set("p_x", 9) && !p.set("x", 9));
        assert_eq!(p.x, 9);
    }
}
