//! The human-readable rendering of a MessagePack payload, for printed histories and logs
//! ([`Payload::display`](super::payload::Payload::display)): JSON-like, as `rmpv` prints
//! values (`["x", 1]`, `{"k": nil}`).
//!
//! Payloads come from clients and from disk, so the renderer reads the bytes as they are, with
//! no tree in between and bounded work: nesting deeper than [`MAX_DEPTH`] renders as `…` and
//! is skipped by a loop, not by recursion (a few thousand nested arrays once overflowed a
//! thread's stack through `rmpv`'s recursive reader, printer and destructor), and a length
//! field is never trusted for an allocation (each element read consumes input).

use std::fmt::Write;

/// Containers nested deeper than this render as `[…]` or `{…}`.
pub const MAX_DEPTH: usize = 32;

/// Renders the first MessagePack value of `bytes`; `None` if they do not start with one.
pub fn render(bytes: &[u8]) -> Option<String> {
    let mut out = String::new();
    value(&mut Reader { bytes }, &mut out, 0)?;
    Some(out)
}

/// A cursor over the bytes.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.bytes.len() {
            return None;
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(head)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes(self.array()?))
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes(self.array()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_be_bytes(self.array()?))
    }

    /// A 8, 16 or 32-bit length (for `Str8`, `Bin16`, `Array32`...).
    fn len(&mut self, bytes: usize) -> Option<usize> {
        match bytes {
            1 => self.u8().map(usize::from),
            2 => self.u16().map(usize::from),
            _ => self.u32().and_then(|n| usize::try_from(n).ok()),
        }
    }

    /// Bytes preceded by their length in `len_bytes` bytes.
    fn sized(&mut self, len_bytes: usize) -> Option<&'a [u8]> {
        let n = self.len(len_bytes)?;
        self.take(n)
    }
}

/// What a marker introduces, once its length fields are read.
enum Item<'a> {
    Text(String),
    Str(&'a [u8]),
    Bin(&'a [u8]),
    Ext(i8, &'a [u8]),
    Array(usize),
    Map(usize),
}

/// Reads one marker and what it carries, except a container's elements.
fn item<'a>(r: &mut Reader<'a>) -> Option<Item<'a>> {
    use rmp::Marker as M;
    let text = |s: String| Some(Item::Text(s));
    match M::from_u8(r.u8()?) {
        M::Null => text("nil".into()),
        M::True => text("true".into()),
        M::False => text("false".into()),
        M::FixPos(n) => text(n.to_string()),
        M::FixNeg(n) => text(n.to_string()),
        M::U8 => text(r.u8()?.to_string()),
        M::U16 => text(r.u16()?.to_string()),
        M::U32 => text(r.u32()?.to_string()),
        M::U64 => text(r.u64()?.to_string()),
        M::I8 => text((r.u8()? as i8).to_string()),
        M::I16 => text((r.u16()? as i16).to_string()),
        M::I32 => text((r.u32()? as i32).to_string()),
        M::I64 => text((r.u64()? as i64).to_string()),
        M::F32 => text(f32::from_bits(r.u32()?).to_string()),
        M::F64 => text(f64::from_bits(r.u64()?).to_string()),
        M::FixStr(n) => Some(Item::Str(r.take(usize::from(n))?)),
        M::Str8 => Some(Item::Str(r.sized(1)?)),
        M::Str16 => Some(Item::Str(r.sized(2)?)),
        M::Str32 => Some(Item::Str(r.sized(4)?)),
        M::Bin8 => Some(Item::Bin(r.sized(1)?)),
        M::Bin16 => Some(Item::Bin(r.sized(2)?)),
        M::Bin32 => Some(Item::Bin(r.sized(4)?)),
        M::FixExt1 => ext(r, 1),
        M::FixExt2 => ext(r, 2),
        M::FixExt4 => ext(r, 4),
        M::FixExt8 => ext(r, 8),
        M::FixExt16 => ext(r, 16),
        M::Ext8 => ext_sized(r, 1),
        M::Ext16 => ext_sized(r, 2),
        M::Ext32 => ext_sized(r, 4),
        M::FixArray(n) => Some(Item::Array(usize::from(n))),
        M::Array16 => Some(Item::Array(r.len(2)?)),
        M::Array32 => Some(Item::Array(r.len(4)?)),
        M::FixMap(n) => Some(Item::Map(usize::from(n))),
        M::Map16 => Some(Item::Map(r.len(2)?)),
        M::Map32 => Some(Item::Map(r.len(4)?)),
        M::Reserved => None,
    }
}

fn ext<'a>(r: &mut Reader<'a>, len: usize) -> Option<Item<'a>> {
    let ty = r.u8()? as i8;
    Some(Item::Ext(ty, r.take(len)?))
}

fn ext_sized<'a>(r: &mut Reader<'a>, len_bytes: usize) -> Option<Item<'a>> {
    let len = r.len(len_bytes)?;
    ext(r, len)
}

/// Renders one value at nesting `depth` (at most [`MAX_DEPTH`] + 1 frames deep).
fn value(r: &mut Reader<'_>, out: &mut String, depth: usize) -> Option<()> {
    match item(r)? {
        Item::Text(s) => out.push_str(&s),
        Item::Str(bytes) => match std::str::from_utf8(bytes) {
            Ok(s) => write!(out, "{s:?}").ok()?,
            Err(_) => write!(out, "{bytes:?}").ok()?,
        },
        Item::Bin(bytes) => write!(out, "{bytes:?}").ok()?,
        Item::Ext(ty, data) => write!(out, "[{ty}, {data:?}]").ok()?,
        Item::Array(len) if depth >= MAX_DEPTH => {
            skip(r, len)?;
            out.push_str("[…]");
        }
        Item::Map(len) if depth >= MAX_DEPTH => {
            skip(r, len.checked_mul(2)?)?;
            out.push_str("{…}");
        }
        Item::Array(len) => {
            out.push('[');
            for i in 0..len {
                if i > 0 {
                    out.push_str(", ");
                }
                value(r, out, depth + 1)?;
            }
            out.push(']');
        }
        Item::Map(len) => {
            out.push('{');
            for i in 0..len {
                if i > 0 {
                    out.push_str(", ");
                }
                value(r, out, depth + 1)?;
                out.push_str(": ");
                value(r, out, depth + 1)?;
            }
            out.push('}');
        }
    }
    Some(())
}

/// Skips `pending` values, however deeply nested, without recursion. Each step consumes at
/// least one byte, so hostile lengths cost no more than the bytes there are.
fn skip(r: &mut Reader<'_>, mut pending: usize) -> Option<()> {
    while pending > 0 {
        pending -= 1;
        match item(r)? {
            Item::Array(len) => pending = pending.checked_add(len)?,
            Item::Map(len) => pending = pending.checked_add(len.checked_mul(2)?)?,
            Item::Text(_) | Item::Str(_) | Item::Bin(_) | Item::Ext(..) => {}
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> Vec<u8> {
        let mut bytes = vec![0x91; depth];
        bytes.push(0xc0);
        bytes
    }

    #[test]
    fn renders_as_rmpv_prints() {
        let v = rmpv::Value::Map(vec![
            (
                rmpv::Value::from("k"),
                rmpv::Value::Array(vec![1.into(), (-3).into()]),
            ),
            (rmpv::Value::Nil, rmpv::Value::Binary(vec![1, 2])),
            (rmpv::Value::from(true), rmpv::Value::Ext(5, vec![9])),
            (rmpv::Value::from(1.5f64), rmpv::Value::from(u64::MAX)),
        ]);
        let mut bytes = Vec::new();
        rmpv::encode::write_value(&mut bytes, &v).unwrap();
        assert_eq!(render(&bytes).unwrap(), v.to_string());
    }

    #[test]
    fn deep_nesting_renders_as_an_ellipsis_without_overflowing_the_stack() {
        // 1,000 levels overflowed a test thread's 2 MiB stack through rmpv.
        for depth in [MAX_DEPTH, MAX_DEPTH + 1, 1_000, 100_000] {
            let shown = render(&nested(depth)).unwrap();
            if depth <= MAX_DEPTH {
                assert!(!shown.contains('…'), "{shown}");
            } else {
                let expected = format!("{}[…]{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
                assert_eq!(shown, expected);
            }
        }
        // Maps too, and a value deep inside one that does not end is not one value.
        let mut maps = [0x81, 0xc0].repeat(5_000);
        maps.push(0xc0);
        assert!(render(&maps).unwrap().contains("{…}"));
        assert_eq!(render(&nested(5_000)[..4_000]), None);
    }

    #[test]
    fn hostile_lengths_cost_only_the_bytes_there_are() {
        // An array32 of 4 billion elements, a str32 of 4 GiB, a map32 deep inside: each ends
        // with the input.
        assert_eq!(render(&[0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0]), None);
        assert_eq!(render(&[0xdb, 0xff, 0xff, 0xff, 0xff, b'a']), None);
        let mut deep = nested(MAX_DEPTH + 1);
        deep.pop();
        deep.extend([0xdf, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(render(&deep), None);
    }

    #[test]
    fn invalid_utf8_strings_and_reserved_markers() {
        assert_eq!(render(&[0xa2, 0xff, 0xfe]).unwrap(), "[255, 254]");
        assert_eq!(render(&[0xc1]), None);
        assert_eq!(render(&[]), None);
        // Bytes after the first value are not looked at.
        assert_eq!(render(&[0x01, 0xc1]).unwrap(), "1");
    }
}
