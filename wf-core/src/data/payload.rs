//! The payload codec: every argument, result and event body is MessagePack (rmp-serde).

use serde::de::{DeserializeOwned, DeserializeSeed};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Largest payload the engine accepts: 2 MiB. Bigger values belong in a blob store, with a
/// reference in the workflow's arguments.
pub const MAX_PAYLOAD_BYTES: usize = 2 * 1024 * 1024;

/// How deep decoding follows nested arrays and maps (serde_json's default recursion limit);
/// deeper input is a decode error. rmp-serde's own default (1,024) let a 3 KB payload of
/// nested maps overflow a 2 MiB thread stack while skipping an unknown field of a struct.
pub const MAX_DECODE_DEPTH: usize = 128;

/// A value encoded as MessagePack, as it travels between clients, workers and the store.
#[derive(Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Payload(#[serde(with = "serde_bytes_compat")] Vec<u8>);

/// Why a value could not be encoded or decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PayloadError {
    /// The value could not be serialized.
    #[error("could not encode {what}: {message}")]
    Encode {
        /// What was being encoded (a type name, an argument list).
        what: String,
        /// The serializer's message.
        message: String,
    },
    /// The bytes do not decode as the expected type (wrong type, wrong arity, corrupt data).
    #[error("could not decode {what}: {message}")]
    Decode {
        /// What was expected (a type name, an argument list).
        what: String,
        /// The deserializer's message.
        message: String,
    },
    /// The encoded value is larger than [`MAX_PAYLOAD_BYTES`].
    #[error("{what} is {size} bytes, over the {limit}-byte payload limit; store large data elsewhere and pass a reference")]
    TooLarge {
        /// What was being encoded.
        what: String,
        /// Its encoded size.
        size: usize,
        /// The limit it exceeded.
        limit: usize,
    },
    /// A payload codec could not encode or decode a stored payload (a wrong key, a codec that
    /// is not installed, damaged bytes).
    #[error("payload codec {codec:?}: {message}")]
    Codec {
        /// The id of the codec concerned.
        codec: String,
        /// What went wrong, and what to do.
        message: String,
    },
}

impl Payload {
    /// Encodes `value`, refusing results over [`MAX_PAYLOAD_BYTES`].
    pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Payload, PayloadError> {
        let bytes = rmp_serde::to_vec(value).map_err(|e| PayloadError::Encode {
            what: std::any::type_name::<T>().to_string(),
            message: e.to_string(),
        })?;
        if bytes.len() > MAX_PAYLOAD_BYTES {
            return Err(PayloadError::TooLarge {
                what: std::any::type_name::<T>().to_string(),
                size: bytes.len(),
                limit: MAX_PAYLOAD_BYTES,
            });
        }
        Ok(Payload(bytes))
    }

    /// Encodes `value` with struct fields by name (maps) rather than by position (arrays):
    /// for readers without the Rust types (JSON over HTTP). It decodes as the same `T`.
    pub fn encode_named<T: Serialize + ?Sized>(value: &T) -> Result<Payload, PayloadError> {
        let bytes = rmp_serde::to_vec_named(value).map_err(|e| PayloadError::Encode {
            what: std::any::type_name::<T>().to_string(),
            message: e.to_string(),
        })?;
        Payload::from_bytes(bytes)
    }

    /// Decodes the payload as a `T`.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, PayloadError> {
        decode_bytes(&self.0)
    }

    /// Wraps bytes that are already MessagePack, checking only the size limit.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Payload, PayloadError> {
        if bytes.len() > MAX_PAYLOAD_BYTES {
            return Err(PayloadError::TooLarge {
                what: "payload".into(),
                size: bytes.len(),
                limit: MAX_PAYLOAD_BYTES,
            });
        }
        Ok(Payload(bytes))
    }

    /// Wraps bytes without the size check: bytes a store read back (written by this engine,
    /// so already checked) or a test's deliberately oversized value.
    pub fn unchecked(bytes: Vec<u8>) -> Payload {
        Payload(bytes)
    }

    /// The encoded bytes, taken out of the payload.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    /// The encoded bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The encoded size in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the payload holds no bytes at all (not even an encoded unit).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A human-readable rendering of the value (JSON-like), for history listings and logs.
    /// Bounded for any bytes: containers nested more than 32 deep render as `[…]`, bytes that
    /// are not MessagePack as `<N undecodable bytes>`, and a payload still encoded by a
    /// [payload codec](crate::PayloadCodec) (read without it) as `<encoded (codec ID), N bytes>`.
    pub fn display(&self) -> String {
        if let Some(codec) = super::payload_codec::encoded_with(&self.0) {
            return format!("<encoded (codec {codec}), {} bytes>", self.0.len());
        }
        super::render::render(&self.0)
            .unwrap_or_else(|| format!("<{} undecodable bytes>", self.0.len()))
    }
}

/// Decodes raw MessagePack bytes as a `T` (nested at most 128 deep).
/// Bytes still encoded by a payload codec fail with [`PayloadError::Codec`] naming it.
pub fn decode_bytes<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, PayloadError> {
    from_slice(bytes).map_err(|e| match super::payload_codec::encoded_with(bytes) {
        // Checked only once decoding failed: clear payloads pay nothing for it.
        Some(codec) => PayloadError::Codec {
            codec: codec.to_string(),
            message: format!(
                "the {} is encoded by payload codec {codec:?}, which this reader does not have; \
                 install it with EngineBuilder::payload_codec (or read through a server that has it)",
                std::any::type_name::<T>()
            ),
        },
        None => PayloadError::Decode {
            what: std::any::type_name::<T>().to_string(),
            message: e.to_string(),
        },
    })
}

/// `rmp_serde::from_slice`, nested at most [`MAX_DECODE_DEPTH`] deep: every decoder of bytes
/// from outside (clients, disk) goes through here or [`read_value`].
pub(crate) fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, rmp_serde::decode::Error> {
    let mut de = rmp_serde::Deserializer::from_read_ref(bytes);
    de.set_max_depth(MAX_DECODE_DEPTH);
    T::deserialize(&mut de)
}

/// Decodes the value at the start of `rest` and moves `rest` past it, nested at most
/// [`MAX_DECODE_DEPTH`] deep.
pub(crate) fn read_value<T: DeserializeOwned>(
    rest: &mut &[u8],
) -> Result<T, rmp_serde::decode::Error> {
    let mut de = rmp_serde::Deserializer::new(rest);
    de.set_max_depth(MAX_DECODE_DEPTH);
    T::deserialize(&mut de)
}

/// [`from_slice`] through a seed (a decoder that writes where its caller wants the value).
pub(crate) fn from_slice_seed<'de, S: DeserializeSeed<'de>>(
    bytes: &'de [u8],
    seed: S,
) -> Result<S::Value, rmp_serde::decode::Error> {
    let mut de = rmp_serde::Deserializer::from_read_ref(bytes);
    de.set_max_depth(MAX_DECODE_DEPTH);
    seed.deserialize(&mut de)
}

/// The length in bytes of the MessagePack value at the start of `bytes`: `None` if the value
/// is cut short, or holds a reserved marker (0xc1) or an extension type (which a decoder may
/// read only in part). Nesting is followed without recursion, to any depth.
pub(crate) fn value_len(bytes: &[u8]) -> Option<usize> {
    let mut pos = 0usize;
    // Values still to skip: one, then the elements of every array and map met. Kept at most
    // the bytes left (every value takes one at least), so it cannot overflow.
    let mut left = 1usize;
    while left > 0 {
        left -= 1;
        let marker = *bytes.get(pos)?;
        pos += 1;
        let class = MARKERS[usize::from(marker)];
        if class < ITEMS {
            pos += usize::from(class);
            continue;
        }
        let items = match marker {
            0x80..=0x9f => usize::from(class - ITEMS),
            0xc4 | 0xd9 => {
                pos += 1 + usize::from(*bytes.get(pos)?);
                continue;
            }
            0xc5 | 0xda => {
                pos += 2 + be_len(bytes, pos, 2)?;
                continue;
            }
            0xc6 | 0xdb => {
                pos = pos.checked_add(4)?.checked_add(be_len(bytes, pos, 4)?)?;
                continue;
            }
            0xdc => {
                pos += 2;
                be_len(bytes, pos - 2, 2)?
            }
            0xdd => {
                pos += 4;
                be_len(bytes, pos - 4, 4)?
            }
            0xde => {
                pos += 2;
                2 * be_len(bytes, pos - 2, 2)?
            }
            0xdf => {
                pos += 4;
                be_len(bytes, pos - 4, 4)?.checked_mul(2)?
            }
            // 0xc1 (never used), 0xc7 - 0xc9 and 0xd4 - 0xd8 (extensions).
            _ => return None,
        };
        left = left.checked_add(items)?;
        if left > bytes.len().checked_sub(pos)? {
            return None;
        }
    }
    (pos <= bytes.len()).then_some(pos)
}

/// Classes of [`MARKERS`] from this one on: `ITEMS + n` is a fixarray or fixmap of `n` values;
/// [`OTHER`], a marker whose length follows it (or that [`value_len`] refuses).
const ITEMS: u8 = 64;
/// See [`ITEMS`].
const OTHER: u8 = 255;

/// Each marker's class for [`value_len`]: below [`ITEMS`], the bytes that follow the marker
/// (a fixed-size scalar, or a fixstr's text).
static MARKERS: [u8; 256] = {
    let mut t = [OTHER; 256];
    let mut m = 0usize;
    while m < 256 {
        t[m] = match m as u8 {
            0x00..=0x7f | 0xc0 | 0xc2 | 0xc3 | 0xe0..=0xff => 0,
            0x80..=0x8f => ITEMS + 2 * (m as u8 & 0x0f),
            0x90..=0x9f => ITEMS + (m as u8 & 0x0f),
            0xa0..=0xbf => m as u8 & 0x1f,
            0xcc | 0xd0 => 1,
            0xcd | 0xd1 => 2,
            0xca | 0xce | 0xd2 => 4,
            0xcb | 0xcf | 0xd3 => 8,
            _ => OTHER,
        };
        m += 1;
    }
    t
};

/// The big-endian length of `n` bytes at `bytes[pos..]`.
fn be_len(bytes: &[u8], pos: usize, n: usize) -> Option<usize> {
    let b = bytes.get(pos..pos.checked_add(n)?)?;
    Some(b.iter().fold(0usize, |acc, &x| (acc << 8) | usize::from(x)))
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display())
    }
}

/// Serializes the bytes as a MessagePack `bin`, not as an array of integers.
mod serde_bytes_compat {
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
            fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
                Ok(v)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Vec<u8>, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = a.next_element::<u8>()? {
                    out.push(b);
                }
                Ok(out)
            }
        }
        d.deserialize_byte_buf(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_tuples_and_refuses_wrong_arity() {
        let p = Payload::encode(&("a".to_string(), 3u32)).unwrap();
        let (s, n): (String, u32) = p.decode().unwrap();
        assert_eq!((s.as_str(), n), ("a", 3));
        assert!(matches!(
            p.decode::<(String,)>(),
            Err(PayloadError::Decode { .. })
        ));
    }

    #[test]
    fn refuses_payloads_over_the_limit() {
        let big = vec![7u8; MAX_PAYLOAD_BYTES + 1];
        let err = Payload::encode(&serde_bytes_wrapper(big)).unwrap_err();
        assert!(matches!(err, PayloadError::TooLarge { .. }), "{err}");
    }

    fn serde_bytes_wrapper(v: Vec<u8>) -> Payload {
        Payload(v)
    }

    #[test]
    fn payload_inside_payload_is_compact_binary() {
        let inner = Payload::encode(&1u8).unwrap();
        let outer = Payload::encode(&inner).unwrap();
        assert_eq!(outer.len(), inner.len() + 2);
        assert_eq!(outer.decode::<Payload>().unwrap(), inner);
    }

    #[test]
    fn value_len_reads_length_fields_and_refuses_what_it_cannot_vouch_for() {
        let long = "x".repeat(300);
        for bytes in [
            Payload::encode(&(long.as_str(), vec![1u8; 3], -7i64, 1.5f64)).unwrap(),
            Payload::encode(&Payload::unchecked(vec![0; 70_000])).unwrap(),
            Payload::encode(&std::collections::BTreeMap::from([(1u32, "a"), (2, "b")])).unwrap(),
            Payload::encode(&vec![0u16; 20]).unwrap(),
        ] {
            let mut with_tail = bytes.as_bytes().to_vec();
            with_tail.extend_from_slice(&[0xc0, 0xc0]);
            assert_eq!(value_len(&with_tail), Some(bytes.len()));
        }
        // An array32 claiming more elements than there are bytes.
        assert_eq!(value_len(&[0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0]), None);
        // A bin32 longer than the input.
        assert_eq!(value_len(&[0xc6, 0, 0, 1, 0, 1, 2]), None);
        // The reserved marker, and an extension inside an array.
        assert_eq!(value_len(&[0xc1]), None);
        assert_eq!(value_len(&[0x92, 0x01, 0xd4, 0x01, 0x02]), None);
        assert_eq!(value_len(&[]), None);
    }

    #[test]
    fn display_renders_values() {
        let p = Payload::encode(&("x", 1)).unwrap();
        assert_eq!(p.display(), "[\"x\", 1]");
    }

    #[test]
    fn deeply_nested_unknown_fields_are_a_decode_error_not_a_stack_overflow() {
        // Found by fuzz_payload_decode_on_deep_nesting: a struct skipping an unknown field
        // {"x": {"x": ...}} 1,000 deep (3 KB) overflowed a test thread's stack inside rmp-serde.
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Order {
            id: Option<String>,
        }
        let mut bytes = [0x81, 0xa1, b'x'].repeat(1_000);
        bytes.push(0xc0);
        let err = Payload::from_bytes(bytes)
            .unwrap()
            .decode::<Order>()
            .unwrap_err();
        assert!(err.to_string().contains("depth"), "{err}");
        // Nesting within the limit decodes.
        let nested: Vec<Vec<Vec<u8>>> = vec![vec![vec![1]]];
        let p = Payload::encode(&nested).unwrap();
        assert_eq!(p.decode::<Vec<Vec<Vec<u8>>>>().unwrap(), nested);
    }

    #[test]
    fn display_of_deeply_nested_arrays_does_not_overflow_the_stack() {
        // Found by fuzz_payload_display_on_deep_nesting: 1,000 nested one-element arrays (1 KB)
        // overflowed a test thread's stack in rmpv's recursive reader.
        let mut bytes = vec![0x91; 1_000];
        bytes.push(0xc0);
        let shown = Payload::from_bytes(bytes).unwrap().display();
        assert!(shown.contains("[…]") && shown.len() < 100, "{shown}");
        assert_eq!(
            Payload::from_bytes(vec![0x91; 1_000]).unwrap().display(),
            "<1000 undecodable bytes>"
        );
    }
}
