//! Naming the members of an algorithm's private area, so that a trace
//! record's raw 104 bytes become the `pre_ca_<member>` and `post_ca_<member>`
//! columns of docs/TRACE_FORMAT.md.
//!
//! The layout is read from BTF, never written down twice: for our ports,
//! from the BPF object's own BTF (each port names its private struct with
//! `KR_CA_TYPE()`, see trace.bpf.h); for the kernel's algorithms traced
//! through a wrapper, from the running kernel's BTF (`struct bictcp`,
//! `struct bbr`). Nested members are flattened the way the Rust reference
//! names them in `visit_ca`: a struct member's members take its name as a
//! prefix (`hspp_phase`), an element of an array of structs takes its index
//! (`bw_s0_t`, from `struct minmax bw` holding `s[3]`), an element of an
//! array of integers takes `_` and its index (`extra_acked_0`), members of
//! an anonymous struct or union take their parent's prefix alone, and a
//! union contributes its first member (`rtt_min`, from CDG's `struct
//! cdg_minmax rtt` holding `union { struct { min; max; }; u64 v64; }`).

/// One integer member of the private area.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    /// Offset from the start of the area, in bits.
    pub bit_offset: u32,
    /// Width in bits (a bitfield's, or the integer's).
    pub bits: u32,
    pub signed: bool,
}

impl Member {
    /// The member's value in `area`, sign-extended if signed; 0 if the
    /// member lies outside the area.
    pub fn read(&self, area: &[u8]) -> i64 {
        let first = (self.bit_offset / 8) as usize;
        let shift = self.bit_offset % 8;
        let mut window = [0u8; 16];
        let end = area.len().min(first + 16);
        if first >= end || self.bits == 0 || self.bits > 64 {
            return 0;
        }
        window[..end - first].copy_from_slice(&area[first..end]);
        let raw = u128::from_le_bytes(window) >> shift;
        let mask = if self.bits == 64 {
            u64::MAX as u128
        } else {
            (1u128 << self.bits) - 1
        };
        let v = (raw & mask) as u64;
        if self.signed && self.bits < 64 && v >> (self.bits - 1) & 1 == 1 {
            (v | !((1u64 << self.bits) - 1)) as i64
        } else {
            v as i64
        }
    }
}

/// The members of a private struct, in declaration order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    pub members: Vec<Member>,
}

impl Layout {
    pub fn names(&self) -> Vec<String> {
        self.members.iter().map(|m| m.name.clone()).collect()
    }

    /// Every member's value in `area`, in [`Layout::names`] order.
    pub fn read_into(&self, area: &[u8], out: &mut Vec<i64>) {
        out.clear();
        out.extend(self.members.iter().map(|m| m.read(area)));
    }
}

#[cfg(feature = "bpf")]
pub use from_btf::{layout_of_struct, layout_of_var};

#[cfg(feature = "bpf")]
mod from_btf {
    use super::{Layout, Member};
    use crate::Error;
    use libbpf_rs::btf::types::{Array, Composite, Int, IntEncoding, MemberAttr, Ptr, Struct, Var};
    use libbpf_rs::btf::Btf;
    use libbpf_rs::btf::{BtfKind, BtfType, HasSize, ReferencesType};

    /// The layout of the struct that the pointer variable `var` points to
    /// (our ports' `kr_ca_type`).
    pub fn layout_of_var(btf: &Btf<'_>, var: &str) -> Result<Layout, Error> {
        let v: Var<'_> = btf
            .type_by_name(var)
            .ok_or_else(|| Error(format!("the BPF object has no {var} in its BTF")))?;
        let target = v.referenced_type().skip_mods_and_typedefs();
        let pointee = Ptr::try_from(target)
            .map_err(|_| Error(format!("{var} is not a pointer in the BPF object's BTF")))?
            .referenced_type()
            .skip_mods_and_typedefs();
        let s = Struct::try_from(pointee)
            .map_err(|_| Error(format!("{var} does not point to a struct")))?;
        let mut layout = Layout::default();
        flatten_composite(btf, &Composite::from(s), 0, "", &mut layout.members);
        Ok(layout)
    }

    /// The layout of `struct name` (the kernel's `bictcp`, `bbr`).
    pub fn layout_of_struct(btf: &Btf<'_>, name: &str) -> Result<Layout, Error> {
        let s: Struct<'_> = btf
            .type_by_name(name)
            .ok_or_else(|| Error(format!("BTF has no struct {name}")))?;
        let mut layout = Layout::default();
        flatten_composite(btf, &Composite::from(s), 0, "", &mut layout.members);
        Ok(layout)
    }

    /// The members of a struct, or of a union its first member only (the
    /// others alias it: CDG's `union { struct { min, max }; u64 v64; }`).
    fn flatten_composite(
        btf: &Btf<'_>,
        c: &Composite<'_>,
        base: u32,
        prefix: &str,
        out: &mut Vec<Member>,
    ) {
        let members = c.iter().take(if c.is_struct { usize::MAX } else { 1 });
        for m in members {
            let name = m.name.map(|n| n.to_string_lossy().into_owned());
            let name = name.unwrap_or_default();
            let (offset, bitfield) = match m.attr {
                MemberAttr::Normal { offset } => (offset, None),
                MemberAttr::BitField { size, offset } => (offset, Some(size as u32)),
            };
            let Some(ty) = btf.type_by_id::<BtfType<'_>>(m.ty) else {
                continue;
            };
            flatten(btf, ty, base + offset, bitfield, prefix, &name, out);
        }
    }

    /// Flattens member `name` (empty for an anonymous struct or union,
    /// whose members then take `prefix` alone) of type `ty` at bit `at`.
    fn flatten(
        btf: &Btf<'_>,
        ty: BtfType<'_>,
        at: u32,
        bitfield: Option<u32>,
        prefix: &str,
        name: &str,
        out: &mut Vec<Member>,
    ) {
        let ty = ty.skip_mods_and_typedefs();
        let full = format!("{prefix}{name}");
        match ty.kind() {
            BtfKind::Int => {
                let Ok(i) = Int::try_from(ty) else { return };
                out.push(Member {
                    name: full,
                    bit_offset: at + i.offset as u32,
                    bits: bitfield.unwrap_or(i.bits as u32),
                    signed: matches!(i.encoding, IntEncoding::Signed),
                });
            }
            BtfKind::Enum => {
                out.push(Member {
                    name: full,
                    bit_offset: at,
                    bits: bitfield.unwrap_or(ty_size(&ty) * 8),
                    signed: false,
                });
            }
            BtfKind::Struct | BtfKind::Union => {
                if let Ok(c) = Composite::try_from(ty) {
                    let inner = if name.is_empty() {
                        prefix.to_string()
                    } else {
                        format!("{full}_")
                    };
                    flatten_composite(btf, &c, at, &inner, out);
                }
            }
            BtfKind::Array => {
                let Ok(a) = Array::try_from(ty) else { return };
                let elem = a.contained_type().skip_mods_and_typedefs();
                let step = ty_size(&elem) * 8;
                let composite = matches!(elem.kind(), BtfKind::Struct | BtfKind::Union);
                for i in 0..a.capacity() as u32 {
                    let n = if composite {
                        format!("{name}{i}")
                    } else {
                        format!("{name}_{i}")
                    };
                    flatten(btf, elem, at + i * step, None, prefix, &n, out);
                }
            }
            _ => {}
        }
    }

    fn ty_size(ty: &BtfType<'_>) -> u32 {
        match ty.kind() {
            BtfKind::Int => Int::try_from(*ty).map(|t| t.size() as u32).unwrap_or(0),
            BtfKind::Struct => Struct::try_from(*ty).map(|t| t.size() as u32).unwrap_or(0),
            BtfKind::Union => libbpf_rs::btf::types::Union::try_from(*ty)
                .map(|t| t.size() as u32)
                .unwrap_or(0),
            BtfKind::Enum => libbpf_rs::btf::types::Enum::try_from(*ty)
                .map(|t| t.size() as u32)
                .unwrap_or(0),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, bit_offset: u32, bits: u32, signed: bool) -> Member {
        Member {
            name: name.into(),
            bit_offset,
            bits,
            signed,
        }
    }

    #[test]
    fn reads_whole_integers_little_endian() {
        let mut area = [0u8; 104];
        area[4..8].copy_from_slice(&0xdead_beefu32.to_le_bytes());
        area[96..104].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(m("x", 32, 32, false).read(&area), 0xdead_beef);
        assert_eq!(
            m("x", 32, 32, true).read(&area),
            0xdead_beefu32 as i32 as i64
        );
        assert_eq!(m("y", 768, 64, false).read(&area), -1);
        assert_eq!(m("past", 832, 32, false).read(&area), 0);
    }

    #[test]
    fn reads_bitfields_as_the_compiler_packs_them() {
        // struct bbr's word of mode:3, prev_ca_state:3, packet_conservation:1,
        // round_start:1, ... cycle_idx-like fields: pack and read back.
        // round_start (bit 7) is left 0.
        let word: u32 = 5 | (2 << 3) | (1 << 6) | (0x5a << 23);
        let mut area = [0u8; 104];
        area[16..20].copy_from_slice(&word.to_le_bytes());
        assert_eq!(m("mode", 128, 3, false).read(&area), 5);
        assert_eq!(m("prev_ca_state", 131, 3, false).read(&area), 2);
        assert_eq!(m("packet_conservation", 134, 1, false).read(&area), 1);
        assert_eq!(m("round_start", 135, 1, false).read(&area), 0);
        assert_eq!(m("lt_rtt_cnt", 151, 9, false).read(&area), 0x5a);
        // a signed 4-bit field holding -3
        let mut a = [0u8; 104];
        a[0] = 0b1101 << 2;
        assert_eq!(m("s", 2, 4, true).read(&a), -3);
    }

    #[test]
    fn layout_reads_in_order() {
        let l = Layout {
            members: vec![m("a", 0, 8, false), m("b", 8, 8, false)],
        };
        let mut out = Vec::new();
        l.read_into(&[7, 9, 0], &mut out);
        assert_eq!(out, [7, 9]);
        assert_eq!(l.names(), ["a", "b"]);
    }
}
